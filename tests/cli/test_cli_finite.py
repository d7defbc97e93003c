"""Every float option of every command refuses nan and inf where click parses it
(sfqtui/cli/command.py): walked over the commands as built, so a new float option is
covered without being named here."""

from pathlib import Path

import pytest
import typer.core
import typer.main
from typer.testing import CliRunner

from sfqtui.cli.app import app

SEED = str(Path(__file__).resolve().parents[2] / "traces" / "seed-example.parquet")


def float_options() -> list[tuple[str, str]]:
    """(command, its float option's longest flag) for every command."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    found = []
    for name, command in group.commands.items():
        for param in command.params:
            if isinstance(param, typer.core.TyperOption) and param.type_descriptor.annotation is float:
                found.append((name, max(param.opts, key=len)))
    return found


FLOAT_OPTIONS = float_options()


def test_the_walk_finds_the_float_options_of_every_kind_of_command() -> None:
    """Shared replay options, the proxy's own, the importer's and replay's: a walk that found none would test nothing."""
    for expected in [("compare", "--output-weight"), ("compare", "--quantum"), ("simulate", "--input-weight"), ("proxy", "--lease"),
                     ("proxy", "--ratio-alpha"), ("import", "--jitter"), ("replay", "--speed")]:
        assert expected in FLOAT_OPTIONS


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity"])
@pytest.mark.parametrize("command,option", FLOAT_OPTIONS, ids=[f"{c} {o}" for c, o in FLOAT_OPTIONS])
def test_every_float_option_refuses_what_is_not_a_finite_number(command: str, option: str, value: str, cli: CliRunner) -> None:
    # The option comes first: click converts the values in the order given, before it looks for missing arguments.
    result = cli.invoke(app, [command, option, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.stderr and "is not a finite number" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_finite_value_still_passes_and_compare_refuses_nan_before_replaying(cli: CliRunner) -> None:
    refused = cli.invoke(app, ["compare", SEED, "--output-weight", "nan"])
    assert refused.exit_code == 2 and "is not a finite number" in refused.stderr and refused.stdout == ""
    # An estimator option prices anew (--reprice): a trace with input_tokens, which seed-example has not.
    accepted = cli.invoke(app, ["compare", SEED.replace("seed-example", "demo"), "--output-weight", "1e3", "--schedulers", "sfq"])
    assert accepted.exit_code == 0, accepted.output
