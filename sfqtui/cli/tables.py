"""The console the commands print their reports on, and printing a rich table on it so
that no number in it is ever cut short."""

from __future__ import annotations

import os

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.table import Column, Table

UNBOUNDED = 10_000  # a width no table reaches, so that rich measures it unclamped


def report_console() -> Console:
    """stdout as a console: a terminal's own width; piped or redirected (and no COLUMNS set),
    no width at all, so that no sentence is wrapped mid-phrase and no table is squeezed to
    the 80 columns rich assumes: a file or a pipe takes lines as long as they are."""
    console = Console()
    if console.is_terminal or "COLUMNS" in os.environ:
        return console
    return Console(width=UNBOUNDED, soft_wrap=True)


def print_table(console: Console, table: Table) -> None:
    """Print `table` so that no cell is cut, wrapping headers before anything else.

    A table wider than the console (80 columns when output is piped) is fitted by rich by
    cutting cells with an ellipsis, so `10,796,364` would print as `10,796,3…`. Here each
    column then takes the width of its longest word (headers wrap at spaces, numbers stay
    whole), and if even that is wider than the console the table runs wider.
    """
    unbounded = console.options.update_width(UNBOUNDED)
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table)
        return
    natural = [Measurement.get(console, unbounded, _alone(column)).maximum for column in table.columns]
    for column in table.columns:
        column.width = _longest_word(console, unbounded, column)
    narrowest = Measurement.get(console, unbounded, table).maximum
    spare = console.width - narrowest
    for column, wants in sorted(zip(table.columns, natural), key=lambda pair: pair[1] - (pair[0].width or 0)):
        grow = min(spare, wants - (column.width or 0))  # headers unwrapped, the least wrapped first
        if grow > 0:
            column.width = (column.width or 0) + grow
            spare -= grow
    narrowest = Measurement.get(console, unbounded, table).maximum
    width = console.width
    console.width = max(width, narrowest)  # print() clamps any width it is given to the console's
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def _longest_word(console: Console, options: ConsoleOptions, column: Column) -> int:
    return max(Measurement.get(console, options, cell).minimum for cell in (column.header, *column.cells))


def _alone(column: Column) -> Table:
    """The column as a borderless table of its own, to measure its natural width."""
    alone = Table(box=None, padding=0, show_edge=False)
    alone.add_column(column.header)
    for cell in column.cells:
        alone.add_row(cell)
    return alone
