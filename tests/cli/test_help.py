"""Every command's --help shows boolean flags as flags: no type column that reads as if
they took a value (typer prints `<bool>`; click prints BOOLEAN), and every flag listed."""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from sfqtui.cli.app import app


def test_no_help_text_shows_a_flag_as_taking_a_value(cli: CliRunner) -> None:
    group = typer.main.get_command(app)
    commands = [([], group), *(([name], command) for name, command in group.commands.items())]  # type: ignore[attr-defined]  # a TyperGroup
    assert len(commands) > 10
    for args, command in commands:
        result = cli.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, args
        for marker in ("<bool>", "BOOLEAN"):
            assert marker not in result.stdout, f"sfqtui {' '.join(args)} --help shows {marker}"
        for param in command.params:
            if getattr(param, "is_flag", False):
                assert param.opts[0] in result.stdout, f"sfqtui {' '.join(args)} --help does not list {param.opts[0]}"
