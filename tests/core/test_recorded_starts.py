"""A recording's engine starts in a replay as it ran (core/replay/recorded_starts.py): each start row
at its recorded time, held between its request's dispatch and its completion, in time order among
the other rows; its dispatch and start name its recorded upstream, as do the recorded capacity's
limit rows; none in a what-if."""

from __future__ import annotations

import math

from sfqtui.core.events import ARRIVE, COMPLETE, DISPATCH, LIMIT, START
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from tests.helpers import trace_of


def recorded(starts: list[float | None], upstream: list[str | None] | None = None) -> Trace:
    """Four requests of 1 s each, one user, at t = 0, 0.1, 0.2, 0.3, with these engine starts (and upstreams)."""
    plain = trace_of([("u", 0.1 * k, 1.0) for k in range(len(starts))], service=1.0)
    return Trace(plain.request_id, plain.user, plain.arrival_s, input_tokens=[10] * len(starts), cost=plain.cost, service_s=plain.service_s,
                 users=plain.users, engine_start_s=starts, upstream=upstream)


def test_each_start_comes_at_its_recorded_time_between_its_dispatch_and_its_completion() -> None:
    # One slot: dispatches at 0, 1, 2, 3. Request 0 started at 0.25; request 1's start was said before its dispatch
    # (held at it); request 2's engine never said; request 3's start came with its completion at 4 (held just before it).
    columns = Replay(recorded([0.25, 0.5, None, 4.0]), ReplayConfig(slots=1, as_recorded=True)).run_all()
    rows = list(zip(columns.t, columns.kind, columns.req, strict=True))
    assert [(t, req) for t, kind, req in rows if kind == START] == [(0.25, 0), (1.0, 1), (math.nextafter(4.0, 0.0), 3)]
    assert [t for t, _, _ in rows] == sorted(t for t, _, _ in rows)
    for req in (0, 1, 3):  # arrive, dispatch, start, complete
        assert [kind for _, kind, r in rows if r == req] == [ARRIVE, DISPATCH, START, COMPLETE]
    assert [kind for _, kind, r in rows if r == 2] == [ARRIVE, DISPATCH, COMPLETE]


def test_a_what_if_or_a_trace_without_starts_has_no_start_rows() -> None:
    for trace, config in ((recorded([0.25, 1.5, 2.5, 3.5]), ReplayConfig(slots=2)),  # other slots than the recording's: not as_recorded
                          (recorded([None] * 4), ReplayConfig(slots=1, as_recorded=True)),
                          (recorded([0.25, 1.5, 2.5, 3.5]), ReplayConfig(slots=1, as_recorded=True, reprice=True))):
        replay = Replay(trace, config)
        assert START not in replay.run_all().kind and not replay.plan.starts_recorded


def test_a_dispatch_and_its_start_name_the_recorded_upstream_and_a_completion_none() -> None:
    trace = recorded([0.25, 1.5, None, 3.5], ["h:2/v1", "h:1/v1", "h:2/v1", None])
    replay = Replay(trace, ReplayConfig(slots=1, as_recorded=True))
    columns = replay.run_all()
    names = replay.plan.upstream_names
    assert names == ["h:1/v1", "h:2/v1"] and columns.upstream is not None
    named = [(kind, req, None if e < 0 else names[e]) for kind, req, e in zip(columns.kind, columns.req, columns.upstream, strict=True)]
    assert [(req, name) for kind, req, name in named if kind == DISPATCH] == [(0, "h:2/v1"), (1, "h:1/v1"), (2, "h:2/v1"), (3, None)]
    assert [(req, name) for kind, req, name in named if kind == START] == [(0, "h:2/v1"), (1, "h:1/v1"), (3, None)]
    assert {name for kind, _, name in named if kind in (ARRIVE, COMPLETE)} == {None}
    # Without the engine starts, the rows still name where each request went.
    columns = Replay(recorded([None] * 4, ["h:2/v1"] * 4), ReplayConfig(slots=1, as_recorded=True)).run_all()
    assert columns.upstream is not None and [e for kind, e in zip(columns.kind, columns.upstream, strict=True) if kind == DISPATCH] == [0] * 4


def test_a_recorded_capacity_s_limit_rows_name_its_upstreams_among_the_requests() -> None:
    # The capacity names b before a; the requests went to a only: the rows' codes index one list of names.
    capacity = RecordedLimits(("h:b", "h:a"), ((0.0, 0, 1, "start"), (0.0, 1, 1, "start"), (0.5, 0, 2, "queue")))
    replay = Replay(recorded([0.25, 1.5, 2.5, 3.5], ["h:a"] * 4), ReplayConfig(slots=2, capacity=capacity, as_recorded=True))
    columns = replay.run_all()
    names = replay.plan.upstream_names
    assert names == ["h:a", "h:b"] and columns.upstream is not None and columns.limit is not None
    limits = [(names[e], limit) for kind, e, limit in zip(columns.kind, columns.upstream, columns.limit, strict=True) if kind == LIMIT]
    assert limits == [("h:b", 1), ("h:a", 1), ("h:b", 2)]
    # On the recorded capacity but not as it ran (repriced): the limit rows still name the capacity's upstreams, and nothing else is named.
    whatif = Replay(recorded([0.25, 1.5, 2.5, 3.5], ["h:a"] * 4), ReplayConfig(slots=2, capacity=capacity, reprice=True))
    columns = whatif.run_all()
    names = whatif.plan.upstream_names
    assert names == ["h:b", "h:a"] and columns.upstream is not None
    assert [names[e] for kind, e in zip(columns.kind, columns.upstream, strict=True) if kind == LIMIT] == ["h:b", "h:a", "h:b"]
    assert {e for kind, e in zip(columns.kind, columns.upstream, strict=True) if kind != LIMIT} == {-1}


def test_a_what_if_names_no_upstream() -> None:
    trace = recorded([0.25, 1.5, 2.5, 3.5], ["h:a", "h:b", "h:a", "h:b"])
    for config in (ReplayConfig(slots=2), ReplayConfig(slots=1, as_recorded=True, reprice=True), ReplayConfig(slots=1)):
        replay = Replay(trace, config)
        assert replay.plan.upstream_names is None and replay.run_all().upstream is None, config
