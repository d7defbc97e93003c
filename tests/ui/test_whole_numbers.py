"""Numbers on screen are never cut (issue 15 §1): a narrow pane leaves out whole log columns,
the status line and the pane heads whole parts, and a long request id keeps its end."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sfqtui.core.log.table import number
from sfqtui.core.numbers import amount, count
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.side_by_side.run_pane import PaneHead
from tests.dashboard import SIZE, TRACES, dashboard, settle, text_of, without_audit


def two_panes(trace: Path, *schedulers: str) -> SfqApp:
    openings = [Opening(trace, is_log=False, config=ReplayConfig(name)) for name in schedulers]
    return SfqApp(openings, lockstep="dispatch")


def log_rows(log: EventLog) -> list[str]:
    return [line for line in text_of(log).splitlines() if line.strip()]


def assert_whole_rows(log: EventLog) -> None:
    """Every row shown fits the view and shows each event's own number whole in its column."""
    columns, table = log.columns, log.table
    assert columns is not None and table is not None
    assert columns.width <= log.scrollable_content_region.width, columns.header
    rows = log_rows(log)
    assert rows
    for line in rows:
        tokens = line.split()
        k = int(tokens[0].replace(",", "")) - table.first_seq
        assert columns.value(number(table.value[k])) in tokens, line  # the meter (or deficit) whole
        assert columns.header.split()[-1] != "request" or (table.request_id(k) or "")[-3:] in line, line


async def test_two_panes_at_120_by_34_show_every_number_of_the_log_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)  # a production trace: its audit is not the claim
    app = two_panes(TRACES / "production-20k.parquet", "sfq", "drr")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, analysed=False)
        await pilot.press("end")
        await pilot.pause()
        logs = list(app.query(EventLog))
        assert len(logs) == 2
        for log in logs:
            assert_whole_rows(log)
        sfq_log = logs[0]
        assert sfq_log.columns is not None and "meter" in sfq_log.columns.header
        assert "v" not in sfq_log.columns.header.split()  # v gave way for the 8-digit meter
        for head, run in zip(app.query(PaneHead), app.runs):
            where = head.text.splitlines()[0]
            assert "…" not in where and where.startswith(f"seq {count(run.cursor.k)} complete"), where
            assert f"v={amount(run.state().v)}" in where.split() or "v=" not in where, where
        status = app.query_one(StatusLine).text
        assert "…" not in status and f"seq {count(app.cursor.k)}" in status and "paused" in status


async def test_the_status_line_with_the_help_open_keeps_its_counts_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)  # a production trace: its audit is not the claim
    app = dashboard("production-20k.parquet")
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot, analysed=False)
        await pilot.press("g", *"20000", "enter")
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.query("HelpPanel")
        status = app.query_one(StatusLine).text
        waiting = count(app.frame().state.queued_total)
        assert "…" not in status, status
        assert f"waiting {waiting}" in status or f"wait {waiting}" in status, status
        assert f"seq {count(app.cursor.k)}" in status


async def test_a_long_request_id_keeps_its_end_after_an_ellipsis(tmp_path: Path) -> None:
    trace = tmp_path / "long-ids.parquet"
    requests = pl.read_parquet(TRACES / "heavy-vs-light.parquet")
    requests.with_columns(("AzureLLMInferenceTrace_conv:" + pl.col("request_id").str.slice(1)).alias("request_id")).write_parquet(trace)
    app = two_panes(trace, "sfq", "drr")
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press(*"nnnn")
        await pilot.pause()
        for log in app.query(EventLog):
            assert_whole_rows(log)
            table = log.table
            assert table is not None
            ids = [table.request_id(int(line.split()[0].replace(",", "")) - table.first_seq) for line in log_rows(log)]
            shown = [line.split()[-1] for line, rid in zip(log_rows(log), ids) if rid]
            assert shown and all(cell.startswith("…") and rid and rid.endswith(cell[1:]) for cell, rid in zip(shown, filter(None, ids)))
            assert len(set(shown)) == len(set(filter(None, ids))) > 1  # rows of different requests read differently


async def test_a_narrow_why_panel_leaves_out_whole_candidate_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)  # a production trace: its audit is not the claim
    from sfqtui.ui.panes.explain_panel import ExplainPanel

    app = dashboard("production-20k.parquet")
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot, analysed=False)
        await pilot.press("g", *"20000", "enter", "n")
        await pilot.pause()
        lines = text_of(app.query_one(ExplainPanel)).splitlines()
        at = next(i for i, line in enumerate(lines) if "head cost" in line)
        assert "…" not in "\n".join(lines[at:at + 8]), "\n".join(lines)
        assert "S_i − v" in lines[at] and "queued" not in lines[at]  # the lead stays; w and queued gave way first
        assert lines[at + 1].split()[-1] == "483"  # the winner's head cost, whole
