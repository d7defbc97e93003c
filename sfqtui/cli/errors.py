"""Bad input ends a command with one line on stderr and exit status 2, never a traceback;
anything else is a bug and shows as one: its traceback, then how to report it."""

import functools
import platform
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar, cast

import typer
from typer.exceptions import TyperException

from sfqtui import __version__
from sfqtui.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])
BUG_EXIT = 1  # what Python itself exits with on an uncaught exception; 2 is the user's
INTERRUPTED_EXIT = 130  # the shells' 128 + SIGINT: what a command stopped by Ctrl-C exits with


def version_line() -> str:
    """What `sfqtui --version` prints, and what a bug report needs."""
    return f"sfqtui {__version__} (Python {platform.python_version()}, {platform.system()} {platform.machine()})"


def fail(message: str, code: int = 2) -> typer.Exit:
    print(f"sfqtui: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def refuses_bad_input(func: F) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None
        # The CLI's own way out (an exit status, a usage error), and a reader that left
        # (`sfqtui teach --list | head -1`), which typer's main ends quietly with exit 1.
        except (typer.Exit, typer.Abort, TyperException, BrokenPipeError):
            raise
        except Exception:
            traceback.print_exc()
            print(f"sfqtui: this is a bug in sfqtui; please report it as a bug, with the command that caused it and this line: {version_line()}",
                  file=sys.stderr)
            raise typer.Exit(BUG_EXIT) from None

    return cast(F, wrapper)


def stops_on_ctrl_c(func: F) -> F:
    """Ctrl-C ends the command with one line, "interrupted", and exit status 130, once the
    ``with`` blocks it left have closed what they opened (a sweep's cluster)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            print("sfqtui: interrupted", file=sys.stderr)
            raise typer.Exit(INTERRUPTED_EXIT) from None

    return cast(F, wrapper)
