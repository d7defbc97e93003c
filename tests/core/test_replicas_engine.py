"""Several replicas behind a router (semantics §11), checked against one-scheduler replays.

- share none: split the trace by the router here (independently of the engine), replay
  each part with the one-scheduler engine on its own slots, and compare every replica's
  events with its part's;
- share global: the events are exactly one scheduler's over the whole trace;
- least-loaded: each arrival went to the replica with the fewest requests queued or in
  flight, with the loads rebuilt from the split replays.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Sequence
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfqtui.core.events import IDLE_RESET
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.config import one_scheduler as one_scheduler_config
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replicas.settings import ROUTERS, ReplicaSettings, Share
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers import SCHEDULERS

Event = tuple[float, str, str | None, float | None, float | None, float | None, float | None, float | None]


def make_trace(rows: list[tuple[str, float, int, int, int]], service: list[float], with_cost: bool,
               weights: dict[str, float] | None = None) -> Trace:
    """Requests (user, arrival, input, max_tokens, output) in arrival order; cost = input + 2 max_tokens when ``with_cost``."""
    return Trace(
        request_id=[f"r{k:04d}" for k in range(len(rows))],
        user=[r[0] for r in rows],
        arrival_s=[r[1] for r in rows],
        input_tokens=[r[2] for r in rows],
        max_tokens=[r[3] for r in rows],
        output_tokens=[r[4] for r in rows],
        cost=[float(r[2] + 2 * r[3]) for r in rows] if with_cost else None,
        service_s=service,
        weights=weights or {},
    )


def part_of(trace: Trace, indices: list[int]) -> Trace:
    """The requests at ``indices`` (in order) as a trace of their own."""

    def pick(column: Sequence[Any] | None) -> list[Any] | None:
        return None if column is None else [column[k] for k in indices]

    return Trace(
        request_id=[trace.request_id[k] for k in indices],
        user=[trace.users[trace.user[k]] for k in indices],
        arrival_s=[trace.arrival_s[k] for k in indices],
        input_tokens=pick(trace.input_tokens), max_tokens=pick(trace.max_tokens), output_tokens=pick(trace.output_tokens),
        cost=pick(trace.cost), service_s=pick(trace.service_s), weights=dict(trace.weights),
    )


def routed_here(trace: Trace, settings: ReplicaSettings) -> list[int]:
    """Each request's replica by the formulas of semantics §11 (static routers only)."""
    count = settings.count
    if settings.router == "hash":
        return [zlib.crc32(trace.user_name(k).encode()) % count for k in range(len(trace))]
    if settings.router == "random":
        return [zlib.crc32(f"{settings.seed}:{trace.request_id[k]}".encode()) % count for k in range(len(trace))]
    assert settings.router == "round-robin"
    return [k % count for k in range(len(trace))]


def index(request: Hashable | None) -> int:
    """A request as rows_from_replay names it: its index in the trace."""
    assert isinstance(request, int)
    return request


def replica_of(log: LogRows, k: int) -> int | None:
    assert log.replica is not None
    return log.replica[k]


def arrivals(log: LogRows) -> list[int]:
    """The replica of each arrival, in order."""
    found = [replica_of(log, k) for k in range(len(log)) if log.kind[k] == "arrive"]
    assert all(rep is not None for rep in found)
    return cast(list[int], found)


def events(log: LogRows, names: list[str], replica: int | None = None) -> list[Event]:
    """Every event (of one replica), requests named by id."""
    credit = log.credit or [None] * len(log)
    return [
        (log.t[k], log.kind[k], None if log.request_id[k] is None else names[index(log.request_id[k])],
         log.cost[k], log.v[k], log.meter[k], log.deficit[k], credit[k])
        for k in range(len(log))
        if replica is None or replica_of(log, k) == replica
    ]


def replicated(trace: Trace, config: ReplayConfig) -> tuple[LogRows, float | None]:
    run = Replay(trace, config)
    return rows_from_replay(run.run_all(), trace, config.scheduler), run.quantum


def one_scheduler(trace: Trace, scheduler: str, slots: int, quantum: float | None) -> LogRows:
    return rows_from_replay(Replay(trace, ReplayConfig(scheduler, slots, quantum=quantum)).run_all(), trace, scheduler)


def assert_split_replays(trace: Trace, scheduler: str, slots: int, settings: ReplicaSettings) -> None:
    """Each replica's events are a one-scheduler replay of the requests routed to it."""
    log, quantum = replicated(trace, ReplayConfig(scheduler, slots, replicas=settings))
    arrived = arrivals(log)
    if settings.router == "least-loaded":
        assignment = arrived
    else:
        assignment = routed_here(trace, settings)
        assert arrived == assignment
    own_slots = [slots // settings.count + (1 if k < slots % settings.count else 0) for k in range(settings.count)]
    completed: dict[int, float] = {}
    for k in range(settings.count):
        indices = [r for r, rep in enumerate(assignment) if rep == k]
        part = part_of(trace, indices)
        alone = one_scheduler(part, scheduler, own_slots[k], quantum)
        assert events(log, list(trace.request_id), k) == events(alone, list(part.request_id)), f"replica {k}"
        completed.update({indices[index(alone.request_id[j])]: alone.t[j] for j in range(len(alone)) if alone.kind[j] == "complete"})
    if settings.router == "least-loaded":
        for i, chosen in enumerate(assignment):
            now = trace.arrival_s[i]
            load = [sum(1 for r in range(i) if assignment[r] == k and completed[r] > now) for k in range(settings.count)]
            assert chosen == load.index(min(load)), f"request {i}: loads {load}"


def busy_trace(with_cost: bool = True, weights: dict[str, float] | None = None) -> Trace:
    rows, service = [], []
    for n in range(120):
        user = "ABCDEFG"[(n * n + 3 * n) % 7]
        rows.append((user, (n // 3) * 0.5, 10 + (n * 7) % 40, 5 + (n * 11) % 30, 3 + (n * 5) % 25))
        service.append(0.5 + (n % 4) * 0.75)
    return make_trace(rows, service, with_cost, weights)


@pytest.mark.parametrize("router", [r for r in ROUTERS])
@pytest.mark.parametrize("count,slots", [(2, 2), (2, 5), (3, 7), (4, 4), (4, 10)])
def test_share_none_is_one_replay_per_replica(router: str, count: int, slots: int) -> None:
    assert_split_replays(busy_trace(), "sfq", slots, ReplicaSettings(count, router, Share("none"), seed=7))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("router", ROUTERS)
def test_every_scheduler_replicates_under_none(scheduler: str, router: str) -> None:
    """On estimated costs and weights too: each replica has its own estimator."""
    trace = busy_trace(with_cost=False, weights={"A": 2.0, "C": 0.5})
    assert_split_replays(trace, scheduler, 5, ReplicaSettings(3, router, Share("none")))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("router", ROUTERS)
def test_share_global_is_one_scheduler(scheduler: str, router: str) -> None:
    trace = busy_trace(with_cost=False, weights={"B": 3.0})
    log, quantum = replicated(trace, ReplayConfig(scheduler, 5, replicas=ReplicaSettings(3, router, Share("global"))))
    assert events(log, list(trace.request_id)) == events(one_scheduler(trace, scheduler, 5, quantum), list(trace.request_id))
    arrived = arrivals(log)
    if router != "least-loaded":
        assert arrived == routed_here(trace, ReplicaSettings(3, router))
    assert len(set(arrived)) > 1
    assert all(replica_of(log, k) is None for k in range(len(log)) if log.kind[k] == "idle_reset")


def test_one_replica_is_todays_replay() -> None:
    trace = busy_trace()
    for share in ("none", "global", "sync:1"):
        config = ReplayConfig("sfq", 4, replicas=ReplicaSettings(1, "least-loaded", Share.parse(share)))
        run = Replay(trace, config)
        assert run.group is None
        assert run.run_all() == Replay(trace, ReplayConfig("sfq", 4)).run_all()


requests = st.lists(
    st.tuples(st.sampled_from("ABCDE"), st.integers(0, 20), st.integers(0, 30), st.integers(1, 20), st.integers(0, 20),
              st.sampled_from([0.25, 0.5, 1.0, 1.5])),
    min_size=1, max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(requests, st.integers(2, 4), st.integers(0, 5), st.sampled_from(ROUTERS), st.sampled_from(SCHEDULERS), st.booleans())
def test_split_replays_hold_for_any_trace(drawn: list, count: int, extra_slots: int, router: str, scheduler: str, with_cost: bool) -> None:
    drawn = sorted(drawn, key=lambda r: r[1])
    trace = make_trace([(u, t / 2, i, m, o) for u, t, i, m, o, _ in drawn], [r[5] for r in drawn], with_cost)
    assert_split_replays(trace, scheduler, count + extra_slots, ReplicaSettings(count, router, Share("none"), seed=3))


def loads_trace(rows: list[tuple[str, float, float]]) -> Trace:
    """(user, arrival, service) with cost 1."""
    return Trace(request_id=[f"q{k}" for k in range(len(rows))], user=[r[0] for r in rows], arrival_s=[r[1] for r in rows],
                 cost=[1.0] * len(rows), service_s=[r[2] for r in rows])


def replicas_of_arrivals(trace: Trace, slots: int, count: int = 2) -> list[int]:
    log, _ = replicated(trace, ReplayConfig("sfq", slots, replicas=ReplicaSettings(count, "least-loaded")))
    return arrivals(log)


def test_least_loaded_ties_go_to_the_lowest_replica() -> None:
    assert replicas_of_arrivals(loads_trace([("A", 0, 5), ("A", 0, 5), ("B", 0, 5), ("B", 0, 5)]), 2) == [0, 1, 0, 1]
    assert replicas_of_arrivals(loads_trace([("A", 0, 5)] * 3), 3, count=3) == [0, 1, 2]


def test_least_loaded_counts_same_time_completions_first() -> None:
    """At t = 1 replica 0's request completes before the arrivals of t = 1 are routed, and
    the first of them counts against replica 0 before the second is routed."""
    trace = loads_trace([("A", 0, 1.0), ("B", 0, 5.0), ("C", 1, 5.0), ("D", 1, 5.0), ("E", 1, 5.0)])
    # t = 1: loads (0, 1) after the completion -> C to 0; loads (1, 1) -> D to 0 (tie); loads (2, 1) -> E to 1
    assert replicas_of_arrivals(trace, 2) == [0, 1, 0, 0, 1]


def test_least_loaded_counts_queued_requests_too() -> None:
    """One slot each: replica 0 holds one running and one queued request, so it is busier."""
    trace = loads_trace([("A", 0, 4), ("A", 0, 4), ("B", 0, 4), ("C", 0.5, 1)])
    assert replicas_of_arrivals(trace, 2) == [0, 1, 0, 1]


def test_settings_that_make_no_sense_are_refused() -> None:
    with pytest.raises(ValueError, match="fewer than --replicas 4"):
        ReplayConfig("sfq", 3, replicas=ReplicaSettings(4, "hash", Share("none")))
    ReplayConfig("sfq", 3, replicas=ReplicaSettings(4, "hash", Share("global")))  # one pool: fine
    with pytest.raises(ValueError, match=">= 1"):
        ReplicaSettings(0)
    with pytest.raises(ValueError, match="unknown router"):
        ReplicaSettings(2, "sticky")
    for bad in ("sync", "sync:", "sync:0", "sync:-1", "sync:1,-2", "sync:x", "sync:1,2,3", "all", "global:3"):
        with pytest.raises(ValueError, match="share"):
            Share.parse(bad)
    with pytest.raises(ValueError, match="meters and v"):
        ReplayConfig("drr", 4, replicas=ReplicaSettings(2, "hash", Share.parse("sync:1")))
    with pytest.raises(ValueError, match="renormalise"):
        ReplayConfig("sfq", 4, renormalise_every=10, replicas=ReplicaSettings(2))
    assert str(Share.parse("sync:0.5,0.1")) == "sync:0.5,0.1" and str(Share.parse("sync:5")) == "sync:5"


def test_a_replicated_config_never_replays_one_scheduler() -> None:
    """Whoever builds the replay (simulate, the dashboard, calibration, compare's fairness),
    a config of several replicas replays them: each event names its replica."""
    trace = busy_trace()
    config = ReplayConfig("sfq", 4, replicas=ReplicaSettings(2))
    columns = Replay(trace, config).run_all()
    assert columns.replica is not None and set(columns.replica) == {0, 1}
    reference = Replay(trace, one_scheduler_config(config)).run_all()
    assert reference.replica is None
    assert columns.kind.count(IDLE_RESET) > reference.kind.count(IDLE_RESET)  # each replica goes idle on its own
