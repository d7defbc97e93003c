"""Tables printed by the headless commands never cut a number, whatever the console's width."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from sfqtui.cli.tables import print_table

HEADERS = ["user", "dispatched", "charged", "share congested", "wait p50 s", "wait p99 s", "one scheduler p99 s"]
ROW = ["user-00", "6,398", "10,796,379", "14.0%", "2,551.21", "2,971.49", "259.30"]


def printed(width: int, by_rich: bool = False) -> list[str]:
    out = io.StringIO()
    table = Table()
    for header in HEADERS:
        table.add_column(header, justify="right")
    table.add_row(*ROW)
    console = Console(file=out, width=width, color_system=None)
    if by_rich:
        console.print(table)
    else:
        print_table(console, table)
    return out.getvalue().splitlines()


def test_a_table_too_wide_for_the_console_wraps_headers_and_keeps_every_number_whole() -> None:
    assert "…" in "\n".join(printed(84, by_rich=True))  # what rich alone prints at this width
    lines = printed(84)
    assert "…" not in "\n".join(lines)
    assert all(cell in lines[-2] for cell in ROW)
    assert max(len(line) for line in lines) <= 84
    assert not any("share congested" in line for line in lines)


def test_a_console_narrower_than_the_longest_words_gets_a_wider_table_not_cut_numbers() -> None:
    lines = printed(40)
    assert "…" not in "\n".join(lines)
    assert all(cell in lines[-2] for cell in ROW)


def test_a_table_that_fits_prints_as_rich_lays_it_out() -> None:
    assert printed(200) == printed(200, by_rich=True)
