"""A replay repriced by the estimator (a trace's recorded costs ignored, as `--ratio-scope user`
asks of a proxy's recording) is a what-if, and the dashboard says so where it names the run:
the status line, and side by side the pane's title; a replay of the recorded costs does not."""

from __future__ import annotations

import pytest

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.side_by_side.run_pane import RunPane
from tests.dashboard import SIZE, TRACES, settle, text_of, without_audit

RECORDED = Opening(TRACES / "demo.parquet", is_log=False, config=ReplayConfig())  # the demo trace has a cost column, as a recording has
REPRICED = RECORDED.rerun(estimator=EstimatorParams(scope="user"))  # what --ratio-scope user (or the palette's estimator) asks


async def test_the_status_line_says_a_replay_is_repriced(monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    for opening, said in ((REPRICED, True), (RECORDED, False)):
        app = SfqApp(opening)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, analysed=False)
            assert ("repriced by the estimator" in text_of(app.query_one(StatusLine))) is said


async def test_side_by_side_the_repriced_panes_title_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    app = SfqApp([RECORDED, REPRICED])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, analysed=False)
        await pilot.press("right")
        titles = [str(pane.border_title) for pane in app.query(RunPane)]
    assert ["repriced by the estimator" in title for title in titles] == [False, True], titles
