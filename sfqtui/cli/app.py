"""The `sfqtui` command: every subcommand registered in one place."""

from typing import Annotated

import typer

from sfqtui.cli.attach import attach
from sfqtui.cli.calibrate import calibrate
from sfqtui.cli.check import check
from sfqtui.cli.compare import compare
from sfqtui.cli.errors import version_line
from sfqtui.cli.explain import explain
from sfqtui.cli.gen import GEN_HELP, gen
from sfqtui.cli.help import FlagCommand, FlagGroup
from sfqtui.cli.importing import import_command
from sfqtui.cli.proxy import proxy
from sfqtui.cli.replay import demo, replay, serve
from sfqtui.cli.simulate import simulate
from sfqtui.cli.sweep import sweep
from sfqtui.cli.teach import TEACH_HELP, teach

app = typer.Typer(
    name="sfqtui",
    cls=FlagGroup,
    help="Replay, explain and compare Start-time Fair Queueing for LLM load balancers.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)] = False,
) -> None:
    pass


app.command(help=GEN_HELP, cls=FlagCommand)(gen)
app.command(cls=FlagCommand)(simulate)
app.command(cls=FlagCommand)(check)
app.command(cls=FlagCommand)(compare)
app.command(cls=FlagCommand)(explain)
app.command(cls=FlagCommand)(calibrate)
app.command(cls=FlagCommand)(sweep)
app.command(name="import", cls=FlagCommand)(import_command)
app.command(cls=FlagCommand)(replay)
app.command(cls=FlagCommand)(demo)
app.command(cls=FlagCommand)(serve)
app.command(help=TEACH_HELP, cls=FlagCommand)(teach)
app.command(cls=FlagCommand)(attach)
app.command(cls=FlagCommand)(proxy)


def main() -> None:
    app()
