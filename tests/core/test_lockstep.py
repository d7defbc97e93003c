"""Runs stepped together: the follower stands at the leader's moment, by time or by dispatch number."""

from __future__ import annotations

from bisect import bisect_left
from pathlib import Path

import pytest

from sfqtui.core.events import DISPATCH
from sfqtui.core.log.cursor import Cursor
from sfqtui.core.log.lockstep import Mode, follow, pair
from sfqtui.core.log.table import EventTable
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import LESSONS

pytestmark = pytest.mark.xdist_group("test_lockstep")  # one worker replays the worked example once

TRACES = Path(__file__).resolve().parents[2] / "traces"


def tables(trace: Path, *schedulers: str, slots: int = 1) -> list[EventTable]:
    return [Run(Opening(trace, is_log=False, config=ReplayConfig(name, slots), slots_given=True)).load_all().table for name in schedulers]


@pytest.fixture(scope="module")
def worked_example(tmp_path_factory: pytest.TempPathFactory) -> list[EventTable]:
    lesson = LESSONS["worked-example"]
    trace = tmp_path_factory.mktemp("lesson") / "worked-example.parquet"
    lesson.write(trace)
    return [Run(Opening(trace, is_log=False, config=lesson.config(name), slots_given=True)).load_all().table for name in lesson.schedulers]


def dispatches_at_t(table: EventTable, k: int) -> int:
    """How many of the dispatches at event k's time come at or before it."""
    return table.dispatch_number(k + 1) - table.dispatch_number(bisect_left(table.t, table.t[k], 0, len(table)))


@pytest.mark.parametrize("mode", ["time", "dispatch"])
def test_at_t_0_of_the_worked_example_both_panes_stand_on_the_same_event(worked_example: list[EventTable], mode: Mode) -> None:
    """All requests arrive at t = 0: the panes step through the same arrivals, then reach the first dispatch together."""
    sfq, drr = worked_example
    first_dispatch = sfq.dispatches[0]
    assert sfq.t[first_dispatch] == 0.0 and first_dispatch > 10
    leader, follower = Cursor(sfq), Cursor(drr)
    for k in range(first_dispatch + 1):
        leader.at_event(k)
        follow(leader, [follower], mode)
        assert follower.k == k and drr.kind[k] == sfq.kind[k] and drr.user[k] == sfq.user[k]
    assert drr.kind[follower.k] == DISPATCH


def test_by_time_the_follower_is_at_the_same_t_after_as_many_of_its_dispatches() -> None:
    sfq, drr = tables(TRACES / "heavy-vs-light.parquet", "sfq", "drr", slots=4)
    short = 0
    for k in range(len(sfq)):
        p = pair(sfq, k, drr, "time")
        t = sfq.t[k]
        assert drr.t[p.k] <= t
        has_t = bisect_left(drr.t, t, 0, len(drr)) < len(drr) and drr.t[bisect_left(drr.t, t, 0, len(drr))] == t
        if p.missing:
            short += 1
            assert "dispatch" in p.missing and drr.t[p.k] == t and dispatches_at_t(drr, p.k) < dispatches_at_t(sfq, k)
        elif has_t and drr.t[p.k] == t:
            assert dispatches_at_t(drr, p.k) == dispatches_at_t(sfq, k)
    assert short  # the two schedulers do part at some instant: that is said, not hidden


def test_by_dispatch_the_follower_is_on_its_own_n_th_dispatch_then_as_many_events_on() -> None:
    sfq, drr = tables(TRACES / "heavy-vs-light.parquet", "sfq", "drr", slots=4)
    for k in range(len(sfq)):
        p = pair(sfq, k, drr, "dispatch")
        n = sfq.dispatch_number(k + 1) - 1
        if p.missing:
            assert drr.nth_dispatch(n) is None and p.k == len(drr) - 1
            continue
        assert drr.dispatch_number(p.k + 1) - 1 == n  # on or past its n-th dispatch, before its next
        if sfq.kind[k] == DISPATCH:
            assert drr.kind[p.k] == DISPATCH


def test_a_follower_not_loaded_that_far_goes_as_far_as_it_has() -> None:
    sfq, drr = tables(TRACES / "seed-example.parquet", "sfq", "drr")
    empty = EventTable("drr")
    assert pair(sfq, 5, empty, "time").k == -1 and pair(sfq, -1, drr, "dispatch").k == -1
    last = sfq.dispatches[-1]
    assert pair(sfq, last, drr, "dispatch").k <= len(drr) - 1
