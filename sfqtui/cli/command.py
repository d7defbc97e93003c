"""The class of every `sfqtui` subcommand: help that shows a flag as a flag
(``FlagCommand``), and float parameters that take only finite numbers.

Python reads ``nan``, ``inf`` and ``-inf`` as floats; no figure of ours means any of them
(a weight, a rate, a timeout), and a replay fed one prints ``-`` for every charge or
writes a log that `check` rejects. So every float parameter of every command is checked
here, right after typer parses it, whoever declares it: a new float option cannot skip
the check (tests/cli/test_cli_finite.py feeds nan and inf to each).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, get_args

import typer
import typer.core

from sfqtui.cli.help import FlagCommand

Parameter = typer.core.TyperOption | typer.core.TyperArgument
Callback = Callable[..., Any]  # click's (ctx, param, value), with typer's own vendored click types


def takes_floats(param: Parameter) -> bool:
    """A parameter whose values are floats: ``float``, ``float | None``, a list or tuple of them."""
    annotation = param.type_descriptor.annotation
    return annotation is float or float in get_args(annotation)


def _finite(callback: Callback | None) -> Callback:
    """``callback`` (if any) on a value whose every float is finite; a usage error otherwise."""

    def check(ctx: Any, param: Any, value: Any) -> Any:
        for number in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(number, float) and not math.isfinite(number):
                raise typer.BadParameter(f"{number} is not a finite number.", ctx=ctx, param=param)
        return value if callback is None else callback(ctx, param, value)

    return check


class Command(FlagCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, Parameter) and takes_floats(param):
                param.callback = _finite(param.callback)
