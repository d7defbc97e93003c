"""A recording under `--slots auto` replayed on other slots (a what-if) says so where the
dashboard names the run: the status line, and side by side the pane's title; a replay that
follows the recorded capacity does not."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.trace.load import load_trace
from sfqtui.trace.write import write_trace
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.side_by_side.run_pane import RunPane
from tests.dashboard import SIZE, settle, text_of, without_audit

SAID = "not the recorded capacity"


def recording(folder: Path) -> Opening:
    """A small trace with a recorded capacity (2 slots, then 3 at t 1), opened to follow it."""
    path = folder / "recorded.parquet"
    frame = pl.DataFrame({"request_id": [f"r{k}" for k in range(12)], "user": ["a", "b", "c"] * 4,
                          "arrival_s": [k * 0.1 for k in range(12)], "cost": [1.0 + k % 3 for k in range(12)], "service_s": [0.5] * 12})
    capacity = {"slots": "auto:256", "limit_from": "auto", "t": [0.0, 1.0], "seq": [0, 9], "upstream": ["e:1", "e:1"], "limit": [2, 3],
                "reason": ["start", "room"]}
    write_trace(frame, path, {"source": "sfqtui proxy", "slots": "auto:256", "capacity": capacity})
    recorded = load_trace(path).recorded_limits
    return Opening(path, is_log=False, config=ReplayConfig(slots=2, capacity=recorded))


async def test_the_status_line_says_a_replay_on_other_slots_is_a_what_if(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    without_audit(monkeypatch)
    followed = recording(tmp_path)
    for opening, said in ((followed.rerun(slots=3), True), (followed, False)):
        app = SfqApp(opening)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, analysed=False)
            assert (SAID in text_of(app.query_one(StatusLine))) is said


async def test_side_by_side_the_what_if_panes_title_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    without_audit(monkeypatch)
    followed = recording(tmp_path)
    app = SfqApp([followed, followed.rerun(slots=3)])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, analysed=False)
        await pilot.press("right")
        titles = [str(pane.border_title) for pane in app.query(RunPane)]
    assert [SAID in title for title in titles] == [False, True], titles


async def test_the_status_line_has_the_recorded_slots_at_the_cursor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    without_audit(monkeypatch)
    app = SfqApp(recording(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, analysed=False)
        await pilot.press("end")  # after the rise at t 1: 3 slots
        await pilot.pause()
        said = text_of(app.query_one(StatusLine))
    assert "/3 slots auto" in said or "slots auto 0/3" in said, said
