"""The state rebuilder, the cursor and the explanations, on logs fed batch by batch."""

from pathlib import Path

import pytest

from sfqtui.core.analysis.explain import explain_dispatch, explain_wait
from sfqtui.core.log.cursor import Cursor
from sfqtui.core.log.table import EventBatch, EventTable
from sfqtui.core.log.timeline import CheckpointBuilder, State, Timeline, apply_events
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from sfqtui.trace.sources import EventSource, LogFileSource, ReplaySource

TRACES = Path(__file__).resolve().parents[2] / "traces"


def load(source: EventSource, every: int) -> tuple[EventTable, Timeline]:
    table = EventTable(source.scheduler)
    timeline = Timeline(table, every=every)
    builder = CheckpointBuilder(every=every)
    for batch, _ in source.batches():
        assert isinstance(batch, EventBatch)  # a replay, or a log from seq 0: events only
        checkpoints = builder.consume(batch)
        table.append(batch)
        timeline.add_checkpoints(checkpoints, builder.every)
    return table, timeline


def fingerprint(s: State) -> tuple:
    clean = lambda xs: [None if x != x else x for x in xs]  # noqa: E731
    return (s.k, clean([s.v]), clean(s.value), list(s.queued), list(s.inflight_of), list(s.charged),
            [s.busy(u) for u in range(len(s.queued))], s.c_max, s.busy_start, s.inflight)


@pytest.mark.parametrize("scheduler", ["sfq", "drr", "rr"])
def test_checkpoints_equal_a_rebuild_from_the_start(scheduler: str) -> None:
    source = ReplaySource(load_trace(TRACES / "demo.parquet"), ReplayConfig(scheduler, 4), chunk=37)
    table, timeline = load(source, every=16)
    for k in range(-1, len(table)):
        fresh = State()
        fresh.grow(len(table.users))
        apply_events(fresh, table, 0, k, table.weights)
        assert fingerprint(timeline.state_at(k)) == fingerprint(fresh)


def test_a_saved_log_and_a_replay_give_the_same_table(tmp_path: Path) -> None:
    loaded = load_trace(TRACES / "idle-return.parquet")
    config = ReplayConfig("sfq", 2)
    simulate(loaded, config, tmp_path / "log.parquet")
    a, _ = load(ReplaySource(loaded, config), every=64)
    b, _ = load(LogFileSource(tmp_path / "log.parquet", batch_rows=100), every=64)
    ids = lambda table: [table.request_id(k) for k in range(len(table))]  # noqa: E731
    assert (list(a.kind), list(a.t), ids(a), a.users) == (list(b.kind), list(b.t), ids(b), b.users)
    assert all((x == y) or (x != x and y != y) for x, y in zip(a.value, b.value)) and len(a.value) == len(b.value)
    assert list(a.cost) == list(b.cost) and list(a.dispatches) == list(b.dispatches)


@pytest.fixture
def seed_example() -> tuple[EventTable, Timeline]:
    return load(ReplaySource(load_trace(TRACES / "seed-example.parquet"), ReplayConfig("sfq", 1)), every=8)


def test_explanations_read_like_the_article_table(seed_example: tuple[EventTable, Timeline]) -> None:
    table, timeline = seed_example
    found = [explain_dispatch(table, timeline, k) for k in table.dispatches[:8]]
    rows = [e for e in found if e is not None]
    assert len(rows) == len(found)
    assert [e.user for e in rows] == list("ABBBABBB")
    assert [e.v for e in rows] == [0, 0, 1, 2, 3, 3, 4, 5]
    table_27 = [(3, 0), (3, 1), (3, 2), (3, 3), (6, 3), (6, 4), (6, 5), (6, 6)]
    for e, (s_a, s_b) in zip(rows, table_27):
        after = timeline.state_at(e.k)
        assert (after.value[table.user_code["A"]], after.value[table.user_code["B"]]) == (s_a, s_b)
    assert "tie at meter 0" in rows[0].reason and "A comes first" in rows[0].reason
    assert rows[1].reason == "smallest meter: B at 0, next A at 3"
    assert "tie at meter 3" in rows[4].reason
    assert [(c.user, c.head_cost) for c in rows[1].candidates] == [("B", 1.0), ("A", 3.0)]


def test_wait_explanation_lists_who_went_ahead(seed_example: tuple[EventTable, Timeline]) -> None:
    table, _ = seed_example
    second_a = table.req[table.dispatches[4]]
    wait = explain_wait(table, second_a)
    assert wait is not None and wait.wait == 6.0
    assert [(a.user, a.count, a.cost) for a in wait.ahead] == [("B", 3, 3.0), ("A", 1, 3.0)]


def test_cursor_moves(seed_example: tuple[EventTable, Timeline]) -> None:
    table, _ = seed_example
    cursor = Cursor(table)
    assert cursor.step(-1) is None and cursor.k == -1
    assert cursor.next_dispatch() == table.dispatches[0]
    assert cursor.previous_dispatch() is None
    assert cursor.end() == len(table) - 1
    assert cursor.home() == -1
    assert cursor.goto("20") == 20
    assert cursor.goto("t=6") == table.at_time(6.0)
    at = cursor.goto("4.5s")
    assert at is not None and table.t[at] <= 4.5
    fifth = table.request_id(table.dispatches[4])
    assert fifth is not None and cursor.goto(fifth) == table.dispatches[4]
    assert cursor.goto("no-such-request") is None
    cursor.home()
    assert cursor.next_dispatch_of("A") == table.dispatches[0]
    assert cursor.next_dispatch_of("A") == table.dispatches[4]
    assert cursor.next_idle_reset() == table.idle_resets[0]
    cursor.violations = [5, 30]
    cursor.home()
    assert cursor.next_violation() == 5 and cursor.next_violation() == 30 and cursor.next_violation() is None
