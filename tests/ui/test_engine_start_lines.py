"""The shares pane's lines on fairness at engine start: the two gaps when the log has start rows,
that they are not available for a live stream whose engine reports none, nothing otherwise."""

from __future__ import annotations

from pathlib import Path

from sfqtui.core.analysis.fairness import fairness
from sfqtui.trace.eventlog import iter_log_rows
from sfqtui.ui.panes.shares import engine_lines
from tests.engine_starts_log import heavy_and_light, with_engine_starts


def test_the_gaps_at_dispatch_and_at_engine_start(tmp_path: Path) -> None:
    log = with_engine_starts(heavy_and_light(tmp_path), tmp_path / "log.parquet")
    figures = fairness(iter_log_rows(log), at_engine_start=True)
    assert [line.plain for line in engine_lines(figures, live=False)] == [
        "worst gap at dispatch  none", "      at engine start  6 heavy > light"]


def test_without_start_rows_only_a_live_stream_says_so() -> None:
    assert [line.plain for line in engine_lines(None, live=True)] == ["engine starts: not reported, so no fairness", "at engine start"]
    assert engine_lines(None, live=False) == []
