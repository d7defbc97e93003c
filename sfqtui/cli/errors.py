"""Bad input ends a command with one line on stderr and exit status 2, never a traceback;
anything else is a bug and shows as one: its traceback, then how to report it."""

import functools
import os
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
PIPE_CLOSED_EXIT = 1  # as Python's documentation has a program exit when its reader leaves


def version_line() -> str:
    """What `sfqtui --version` prints, and what a bug report needs."""
    return f"sfqtui {__version__} (Python {platform.python_version()}, {platform.system()} {platform.machine()})"


def fail(message: str, code: int = 2) -> typer.Exit:
    print(f"sfqtui: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail a second time
    (the recipe of Python's documentation for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def refuses_bad_input(func: F) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None
        except (typer.Exit, typer.Abort, TyperException):  # the CLI's own way out: an exit status, a usage error
            raise
        except BrokenPipeError:  # the reader left (`sfqtui compare ... | head`): stop quietly, as cat does
            _quiet_stdout()
            raise typer.Exit(PIPE_CLOSED_EXIT) from None
        except Exception:
            traceback.print_exc()
            print(f"sfqtui: this is a bug in sfqtui; please report it as a bug, with the command that caused it and this line: {version_line()}",
                  file=sys.stderr)
            raise typer.Exit(BUG_EXIT) from None

    return cast(F, wrapper)
