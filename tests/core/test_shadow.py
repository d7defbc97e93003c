"""The shadow re-drives the real scheduler from a log: its state is the engine's own at every step."""

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sfqtui.core.log.shadow import LOCAL_KEEP, LOCAL_MIN, Shadow, ShadowMismatch, charge_between
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.schedulers import DRR, VTC, Scheduler
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.load import load_trace
from sfqtui.trace.write import write_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"


def run_of(path: Path, scheduler: str, slots: int, quantum: float | None = None) -> Run:
    config = ReplayConfig(scheduler, slots, quantum=quantum)
    return Run(Opening(path, is_log=False, config=config, slots_given=True)).load_all()


def drr_state(drr: Scheduler, users: Iterable[Any], name_of: Callable[[Any], str]) -> tuple:
    """Everything a DRR pane draws, by user name: the active list, the visited user, the
    quantum, and each user's deficit and queue length."""
    assert isinstance(drr, DRR)
    visiting = drr.visiting
    return (
        [name_of(u) for u in drr.active_list()],
        None if visiting is None else name_of(visiting),
        drr.quantum,
        {name_of(u): (drr.reading(u)[2], drr.queued(u)) for u in users},
    )


@pytest.mark.parametrize(("scenario", "slots", "quantum"), [("heavy-vs-light", 4, 100.0), ("idle-return", 2, None)])
def test_drr_shadow_equals_the_engines_drr_at_every_step(scenario: str, slots: int, quantum: float | None) -> None:
    path = TRACES / f"{scenario}.parquet"
    run = run_of(path, "drr", slots, quantum)
    shadow = Shadow.of_run(run.table, run.metadata)
    trace = load_trace(path).trace
    replay = Replay(trace, ReplayConfig("drr", slots, quantum=quantum))
    engine = replay.scheduler
    assert isinstance(engine, DRR)
    names = list(trace.users)
    steps = 0
    for _ in replay.run(chunk=1):
        k = replay.log.start + len(replay.log) - 1
        mine = shadow.at(k)
        assert isinstance(mine, DRR)
        expected = drr_state(engine, range(len(names)), names.__getitem__)  # the engine's users are codes
        got = drr_state(mine, names, str)
        assert got == expected, f"after event {k}"
        steps += 1
    assert steps > 500 and replay.dispatched == len(trace)


def test_seeking_back_replays_at_most_every_events_and_keeps_few_copies() -> None:
    run = run_of(TRACES / "heavy-vs-light.parquet", "drr", 4, 100.0)
    table = run.table
    walked = Shadow(table, 100.0, every=16, keep=4)
    walked.at(len(table) - 1)
    assert len(walked._checkpoints) <= 4 and walked.every > 16
    applied = []
    original = walked._apply
    def spy(k: int) -> None:  # records the steps it replays
        applied.append(k)
        original(k)

    walked._apply = spy  # type: ignore[method-assign]  # a spy in place of the method
    for k in (len(table) // 2, 17, len(table) - 40, 3, len(table) - 1):
        applied.clear()
        sought = walked.at(k)
        assert len(applied) <= walked.every
        walked_from_the_start = Shadow(table, 100.0).at(k)
        assert isinstance(sought, DRR) and isinstance(walked_from_the_start, DRR)
        assert drr_state(sought, table.users, str) == drr_state(walked_from_the_start, table.users, str), f"event {k}"


def test_stepping_back_event_by_event_re_drives_a_fraction_of_the_interval() -> None:
    run = run_of(TRACES / "heavy-vs-light.parquet", "drr", 4, 100.0)
    table = run.table
    shadow = Shadow(table, 100.0, every=1024, keep=2)
    shadow.at(len(table) - 1)
    assert shadow.every >= 1024
    applied: list[int] = []
    original = shadow._apply
    def spy(k: int) -> None:  # records the steps it replays
        applied.append(k)
        original(k)

    shadow._apply = spy  # type: ignore[method-assign]  # a spy in place of the method
    re_drives = []
    for k in range(len(table) - 2, len(table) - 402, -1):
        applied.clear()
        sought = shadow.at(k)
        re_drives.append(len(applied))
        if k % 50 == 0:
            from_the_start = Shadow(table, 100.0).at(k)
            assert isinstance(sought, DRR) and isinstance(from_the_start, DRR)
            assert drr_state(sought, table.users, str) == drr_state(from_the_start, table.users, str), f"event {k}"
    spacing = max(LOCAL_MIN, shadow.every // LOCAL_KEEP)
    assert max(re_drives) <= shadow.every
    assert sorted(re_drives)[len(re_drives) // 2] < spacing  # most steps start from a finer copy nearby


def test_an_adopted_shadow_seeks_far_without_re_driving_the_log_and_agrees() -> None:
    run = run_of(TRACES / "heavy-vs-light.parquet", "drr", 4, 100.0)
    table = run.table
    view = Shadow(table, 100.0, every=16, keep=8)
    view.at(40)  # where a view had been
    warmed = Shadow(table, 100.0, every=16, keep=8)
    warmed.at(len(table) - 1)
    view.adopt(warmed)
    assert view.reach == warmed.reach > 40
    applied = []
    original = view._apply
    def spy(k: int) -> None:  # records the steps it replays
        applied.append(k)
        original(k)

    view._apply = spy  # type: ignore[method-assign]  # a spy in place of the method
    for k in (len(table) - 1, 41, len(table) // 2):
        applied.clear()
        sought = view.at(k)
        assert len(applied) <= view.every, f"event {k}: re-drove {len(applied)} events"
        from_the_start = Shadow(table, 100.0).at(k)
        assert isinstance(sought, DRR) and isinstance(from_the_start, DRR)
        assert drr_state(sought, table.users, str) == drr_state(from_the_start, table.users, str), f"event {k}"
    # The warmed shadow's copies were only cloned: it still agrees too.
    assert drr_state(warmed.at(len(table) - 1), table.users, str) == drr_state(Shadow(table, 100.0).at(len(table) - 1), table.users, str)


def test_a_shadow_adopts_only_copies_of_its_own_log_that_reach_further() -> None:
    run = run_of(TRACES / "heavy-vs-light.parquet", "drr", 4, 100.0)
    far = Shadow(run.table, 100.0, every=16)
    far.at(len(run.table) - 1)
    near = Shadow(run.table, 100.0, every=16)
    near.at(100)
    far.adopt(near)
    assert far.reach > near.reach
    other_quantum = Shadow(run.table, 50.0, every=16)
    other_quantum.adopt(far)
    assert other_quantum.reach == -1


@pytest.mark.parametrize("weighted", [False, True])
def test_vtc_shadow_counters_match_the_log_on_every_row(weighted: bool, tmp_path: Path) -> None:
    path = TRACES / "calibration.parquet"
    if weighted:  # weights whose divisions round, so each completion charge must be found exactly
        frame = pl.read_parquet(path)
        frame = frame.with_columns(weight=pl.col("user").replace_strict({"honest": 3.0, "typical": 0.7, "padder": 1.1}))
        path = tmp_path / "weighted.parquet"
        write_trace(frame, path, {})
    run = run_of(path, "vtc", 8)
    table = run.table
    shadow = Shadow.of_run(table, run.metadata)
    for k in range(len(table)):
        counter = shadow.at(k)
        assert isinstance(counter, VTC)
        if table.user[k] >= 0:
            assert counter.counter(table.users[table.user[k]]) == table.value[k], f"event {k}"


def test_a_log_the_scheduler_would_not_make_is_refused_where_it_diverges() -> None:
    run = run_of(TRACES / "seed-example.parquet", "drr", 1)
    shadow = Shadow(run.table, quantum=1.0)
    with pytest.raises(ShadowMismatch, match=r"event \d+: the log dispatches r\d+ of [AB], but drr with these settings picks") as first:
        shadow.at(len(run.table) - 1)
    with pytest.raises(ShadowMismatch) as again:  # a failed event leaves no half-changed state behind
        shadow.at(len(run.table) - 1)
    assert str(again.value) == str(first.value)


def test_the_completion_charge_is_found_exactly_where_the_plain_increase_rounds_off() -> None:
    before, weight = 13226.25119989551, 0.3
    after = before + 9056.0 / weight
    assert before + (after - before) * weight / weight != after
    charge = charge_between(before, after, weight)
    assert charge is not None and before + charge / weight == after
