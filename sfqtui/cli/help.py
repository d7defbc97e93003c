"""Help that shows a flag as a flag.

typer (0.29) prints ``<bool>`` in the type column beside every boolean flag, ``--help``
included, which reads as if the flag took a value: ``--play true`` then fails with
"Got unexpected extra argument". A flag takes no value, so its help shows none; every
command and the group use these classes (tests/cli/test_help.py scans every help text).
"""

from __future__ import annotations

from typing import Any

import typer.core


def _flags_take_no_value(command: Any, ctx: Any) -> None:
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # the type column shows the metavar when there is one


class FlagCommand(typer.core.TyperCommand):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        _flags_take_no_value(self, ctx)
        super().format_help(ctx, formatter)


class FlagGroup(typer.core.TyperGroup):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        _flags_take_no_value(self, ctx)
        super().format_help(ctx, formatter)
