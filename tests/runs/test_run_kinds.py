"""The kind of run as types: a log recorded from a proxy's state says its first window as
a stream does, and a live run answers for itself (follows, toggles) where a run of a
source that ends has nothing to follow."""

from __future__ import annotations

from pathlib import Path

from sfqtui.core.log.table import EventBatch
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import LiveRun, Run
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.trace.notices import WindowStarts
from sfqtui.trace.sources import LogFileSource
from tests.late_log import JOIN, TRACES, late_log


def test_a_log_from_a_proxys_state_says_its_window_first_and_opens_in_it(tmp_path: Path) -> None:
    late, whole = late_log(tmp_path)
    items = [item for item, _ in LogFileSource(late).batches()]
    first = items[0]
    assert isinstance(first, WindowStarts) and first.first_seq == JOIN and list(first.users) == whole.table.users
    assert all(isinstance(item, EventBatch) for item in items[1:])
    run = Run(Opening(late, is_log=True, config=ReplayConfig())).load_all()
    assert run.table.first_seq == JOIN and len(run.table) == len(whole.table) - JOIN - 1
    run.cursor.end()
    whole.cursor.end()
    end, expected = run.state(), whole.state()
    assert (end.queued, end.inflight_of, end.value) == (expected.queued, expected.inflight_of, expected.value)


def test_a_live_run_follows_and_a_run_that_ends_has_nothing_to_follow() -> None:
    ends = Run.of(Opening(TRACES / "heavy-vs-light.parquet", is_log=False, config=ReplayConfig()))
    live = Run.of(LiveOpening("http://127.0.0.1:9"))
    assert type(ends) is Run and ends.loaded == 0.0 and not ends.following and not ends.toggle_following()
    assert isinstance(live, LiveRun) and live.loaded is None and live.following and live.connection is None
    assert live.toggle_following() and not live.following  # space pauses following
    assert live.toggle_following() and live.following
