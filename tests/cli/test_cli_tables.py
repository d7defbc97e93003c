"""Tables printed by the headless commands never cut a number, whatever the console's width."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from sfqtui.cli.app import app
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


ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"
PIPED = {"COLUMNS": None}  # what a pipe gives rich: no terminal, no width said


def report(cli: CliRunner, *args: str) -> list[str]:
    result = cli.invoke(app, list(args), env=PIPED)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_a_piped_report_keeps_each_sentence_and_table_row_on_one_line(cli: CliRunner) -> None:
    trace = TRACES / "heavy-vs-light.parquet"
    lines = report(cli, "compare", str(trace), "--schedulers", "sfq", "--replicas", "2")
    assert f"{trace}: 1,100 requests, 2 users, 4 slots, 2 replicas, hash, share none" in lines
    header = next(line for line in lines if "┃ user" in line)
    assert all(name in header for name in ("share congested", "wait p50 s", "one scheduler p99 s"))  # no header wrapped


def wait_cells(lines: list[str]) -> list[str]:
    """The cells of every column of waits in the boxed tables of ``lines``."""
    cells: list[str] = []
    columns: list[int] = []
    for line in lines:
        if line.startswith("┃"):
            columns = [k for k, header in enumerate(line.strip("┃").split("┃")) if "wait" in header]
        elif line.startswith("│"):
            row = [cell.strip() for cell in line.strip("│").split("│")]
            cells += [row[k] for k in columns]
    return cells


@pytest.mark.parametrize("args", [
    ["compare", "weighted.parquet", "--schedulers", "sfq,fifo"],  # whole seconds
    ["compare", "idle-return.parquet", "--schedulers", "sfq,fifo", "--replicas", "2"],  # under ten seconds, and the reference's
    ["explain", "seed-example.parquet", "r000005", "--compare", "drr,fifo"],
])
def test_every_table_shows_waits_to_the_hundredth_of_a_second(args: list[str], cli: CliRunner) -> None:
    command, trace, *options = args
    cells = wait_cells(report(cli, command, str(TRACES / trace), *options))
    assert cells and all(re.fullmatch(r"\d{1,3}(,\d{3})*\.\d\d", cell) for cell in cells), cells
