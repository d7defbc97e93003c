"""A recording's engine starts in a replay as it ran (core/replay/recorded_starts.py): each start row
at its recorded time, held between its request's dispatch and its completion, in time order among
the other rows; none in a what-if."""

from __future__ import annotations

import math

from sfqtui.core.events import ARRIVE, COMPLETE, DISPATCH, START
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from tests.helpers import trace_of


def recorded(starts: list[float | None]) -> Trace:
    """Four requests of 1 s each, one user, at t = 0, 0.1, 0.2, 0.3, with these engine starts."""
    plain = trace_of([("u", 0.1 * k, 1.0) for k in range(len(starts))], service=1.0)
    return Trace(plain.request_id, plain.user, plain.arrival_s, input_tokens=[10] * len(starts), cost=plain.cost, service_s=plain.service_s,
                 users=plain.users, engine_start_s=starts)


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
