"""A progress bar on stderr for long runs (quiet when stderr is not a terminal)."""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int, int], None]]:
    console = Console(file=sys.stderr)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, of: int) -> None:
            bar.update(task, completed=done, total=of)

        yield update
