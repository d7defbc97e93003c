"""Bad input ends a command with one line on stderr and exit status 2, never a traceback."""

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from sfqtui.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 2) -> typer.Exit:
    print(f"sfqtui: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def refuses_bad_input(func: F) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (InputError, ValueError) as exc:
            raise fail(str(exc)) from None

    return wrapper  # type: ignore[return-value]
