"""A recording's capacity in a replay (core/replay/recorded.py, docs/semantics.md §13): each
change at its time, a rise dispatching at once, a fall preempting nothing, the slots the sum
of each upstream's last limit; and the table as a recording's metadata holds it."""

from __future__ import annotations

import pytest

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import COMPLETE, DISPATCH, LIMIT
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.errors import InputError
from tests.helpers import trace_of


def table(*changes: tuple[float, str, int, str]) -> dict[str, object]:
    """A metadata capacity table from (t, upstream, limit, reason) rows."""
    return {"slots": "auto:8", "t": [c[0] for c in changes], "seq": list(range(len(changes))), "upstream": [c[1] for c in changes],
            "limit": [c[2] for c in changes], "reason": [c[3] for c in changes]}


def test_a_rise_dispatches_at_once_and_a_fall_preempts_nothing() -> None:
    # Six requests of 1 s each at t = 0. Upstream a starts at 1; b joins at 0.5 with 2 (3 slots),
    # is cut to 1 at 1.2 (2 slots, 3 in flight) and a rises to 3 at 1.7 (4 slots).
    recorded = RecordedLimits.from_metadata(table((0.0, "a", 1, "start"), (0.5, "b", 2, "start"), (1.2, "b", 1, "queue"),
                                                  (1.7, "a", 3, "room")))
    assert recorded is not None and recorded.upstreams == ("a", "b") and recorded.totals() == [1, 3, 2, 4] and recorded.first == 3
    trace = trace_of([("u", 0.0, 1.0)] * 6, service=1.0)
    columns = Replay(trace, ReplayConfig(slots=recorded.first, capacity=recorded)).run_all()
    assert columns.limit is not None and columns.upstream is not None
    kinds = columns.kind
    # t 0: one dispatch; 0.5: two at once (the rise); 1.0: the first completes and one goes (3 slots);
    # 1.2: 3 in flight on 2 slots, none preempted; 1.5: two complete, only one goes; 1.7: the rise sends the last.
    assert [columns.t[k] for k in range(len(kinds)) if kinds[k] == DISPATCH] == [0.0, 0.5, 0.5, 1.0, 1.5, 1.7]
    assert [columns.t[k] for k in range(len(kinds)) if kinds[k] == COMPLETE] == [1.0, 1.5, 1.5, 2.0, 2.5, 2.7]
    limits = [(columns.t[k], columns.upstream[k], columns.limit[k]) for k in range(len(kinds)) if kinds[k] == LIMIT]
    assert limits == [(0.0, 0, 1), (0.5, 1, 2), (1.2, 1, 1), (1.7, 0, 3)]


def test_a_capacity_replay_refuses_what_does_not_fit() -> None:
    recorded = RecordedLimits.from_metadata(table((0.0, "a", 2, "start")))
    assert recorded is not None
    with pytest.raises(InputError, match="recorded service times"):
        ReplayConfig(slots=2, capacity=recorded, engine=EngineSettings(EngineModel()))
    with pytest.raises(InputError, match="share global"):
        ReplayConfig(slots=2, capacity=recorded, replicas=ReplicaSettings(2, "round-robin", Share.parse("none")))


@pytest.mark.parametrize(("found", "message"), [
    ({"t": [0.0]}, "must hold the lists"),
    (table((1.0, "a", 2, "start"), (0.5, "a", 3, "room")), "a time not before the last"),
    (table((0.0, "a", 0, "start")), "a limit >= 1"),
    (table((0.0, "a", 2, "because")), "a known reason"),
])
def test_a_malformed_table_is_refused_in_one_line(found: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        RecordedLimits.from_metadata(found)
