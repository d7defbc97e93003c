"""The `sfqtui` command: every subcommand registered in one place.

A process imports only the subcommand it runs (`sfqtui simulate` does not load the
dashboard, the proxy's clients or the sweeps); ``app`` (for tests and other callers in
the same process) has them all.
"""

import sys
from importlib import import_module
from typing import Annotated

import typer

from sfqtui.cli.command import Command
from sfqtui.cli.errors import version_line
from sfqtui.cli.help import FlagGroup
from sfqtui.core.gcpause import keep_out_of_collections

# name -> (module, function, the module's help text for it when not the docstring), in the order help lists them
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "gen": ("sfqtui.cli.gen", "gen", "GEN_HELP"),
    "simulate": ("sfqtui.cli.simulate", "simulate", None),
    "check": ("sfqtui.cli.check", "check", None),
    "compare": ("sfqtui.cli.compare", "compare", None),
    "explain": ("sfqtui.cli.explain", "explain", None),
    "calibrate": ("sfqtui.cli.calibrate", "calibrate", None),
    "sweep": ("sfqtui.cli.sweep", "sweep", None),
    "import": ("sfqtui.cli.importing", "import_command", None),
    "replay": ("sfqtui.cli.replay", "replay", None),
    "demo": ("sfqtui.cli.replay", "demo", None),
    "serve": ("sfqtui.cli.replay", "serve", None),
    "teach": ("sfqtui.cli.teach", "teach", "TEACH_HELP"),
    "attach": ("sfqtui.cli.attach", "attach", None),
    "proxy": ("sfqtui.cli.proxy", "proxy", None),
    "engine": ("sfqtui.cli.engine", "engine", None),
    "fit": ("sfqtui.cli.fit", "fit", None),
}


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(version_line())
        raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)] = False,
) -> None:
    pass


def build_app(names: list[str]) -> typer.Typer:
    """The command with the subcommands ``names`` (in COMMANDS order)."""
    built = typer.Typer(
        name="sfqtui",
        cls=FlagGroup,
        help="Replay, explain and compare Start-time Fair Queueing for LLM load balancers.",
        no_args_is_help=True,
        rich_markup_mode="markdown",
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    built.callback()(_root)
    for name, (module_name, function, help_name) in COMMANDS.items():
        if name in names:
            module = import_module(module_name)
            built.command(name=name, help=getattr(module, help_name) if help_name else None, cls=Command)(getattr(module, function))
    return built


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        return build_app(list(COMMANDS))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    asked = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        build_app([asked] if asked in COMMANDS else list(COMMANDS))()
    finally:
        # The process ends here: without this, the collector's walks at interpreter exit
        # take a few tenths of a second after a large replay. Exit handlers still run.
        keep_out_of_collections()
