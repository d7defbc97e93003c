"""Whether a group's SFQ bound holds (docs/protocol.md, ``bound``), as the dashboard tells it.

A replica of a group sends a ``bound`` event after ``run`` and on every change, and
``/v1/sfq/state`` carries a ``bound`` field: ``global`` while the group's SFQ decides,
``suspended`` while the replica followed cannot reach the store. When the proxy names no
time (``since``), the moment the client learnt of it stands in: exact for a change heard
as it happened, a latest time (``by``) for the bound a new connection or a state finds.
A recording keeps each change in its metadata (``BOUND_KEY``) with the event time ``t``
it came at (``since`` on the run's clock), so that a replay tells the bound at its cursor.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa

from sfqtui.protocol import BOUND, GLOBAL, SUSPENDED, ProxyState
from sfqtui.trace.notices import Notice

# A recording's metadata, as the proxy's --record keeps it too: [{"t", "bound", "reason", "since", "since_seq", "by"}, ...] in the order they came.
BOUND_KEY = "bound"


@dataclass(frozen=True)
class Bound(Notice):
    """The group's bound as last heard: ``global`` or ``suspended``, why, and since when
    (Unix time; ``by``: at the latest then, the proxy did not say)."""

    bound: str
    reason: str = ""
    since: float | None = None
    by: bool = False
    since_seq: int | None = None  # the proxy's seq when it changed, where it said

    @property
    def suspended(self) -> bool:
        return self.bound == SUSPENDED


def bound_of(data: Any, found: bool) -> Bound | None:
    """The bound a ``bound`` event or a ``/v1/sfq/state`` snapshot says (None: it says none).
    Without its ``since``, now stands in: when it was ``found`` already in force, as a latest time."""
    if not isinstance(data, dict) or not isinstance(data.get(BOUND), str):
        return None
    since, reason, since_seq = data.get("since"), data.get("reason"), data.get("since_seq")
    reason = reason if isinstance(reason, str) else ""
    since_seq = since_seq if isinstance(since_seq, int) else None
    if isinstance(since, (int, float)):
        return Bound(data[BOUND], reason, float(since), since_seq=since_seq)
    return Bound(data[BOUND], reason, time.time(), by=found, since_seq=since_seq)


def in_group(state: ProxyState | None) -> bool | None:
    """Whether ``/v1/sfq/state`` is a group replica's (a ``bound`` field, or more than one replica); None: no state to tell."""
    if state is None:
        return None
    return BOUND in state or int(state.get("replicas") or 1) > 1


def of_group(events: pa.Table, group: bool | None) -> pa.Table:
    """Events as listed and recorded: a lone proxy's (``group`` False) without the replica column, which it leaves null."""
    return events.drop_columns(["replica"]) if group is False and "replica" in events.column_names else events


def recorded_change(bound: Bound, t: float) -> dict[str, Any]:
    """A change as a recording's metadata keeps it: at event time ``t``."""
    return {"t": t, **asdict(bound)}


def recorded_bound(metadata: dict[str, Any], t: float | None) -> Bound | None:
    """The bound at event time ``t`` (None: before the first event) in a recording with this metadata (None: it kept none)."""
    changes = metadata.get(BOUND_KEY)
    return bound_at(changes, t) if changes and t is not None else None


def bound_at(changes: Sequence[dict[str, Any]], t: float) -> Bound | None:
    """The bound in force at event time ``t`` in a recording (its metadata's ``BOUND_KEY``); None before any change."""
    times = [float(change.get("t", 0.0)) for change in changes]
    i = bisect_right(times, t)
    if not i:
        return None
    change = changes[i - 1]
    return Bound(str(change.get(BOUND, GLOBAL)), str(change.get("reason") or ""), change.get("since"), bool(change.get("by")), change.get("since_seq"))
