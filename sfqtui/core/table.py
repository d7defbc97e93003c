"""An append-only, columnar event log in memory: what every view reads.

Every source (a replay of a trace, a saved log, later a live stream) appends batches of
§7 events; nothing is ever rewritten. Numbers live in ``array('d')`` (8 bytes each, NaN
for null) and users as small integer codes, so a million-request log stays compact.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Sequence

from sfqtui.core.events import ARRIVE, CANCEL, DISPATCH, IDLE_RESET, KINDS

NaN = math.nan


@dataclass(frozen=True)
class EventBatch:
    """A batch of events in seq order, ready to append.

    ``user`` holds codes into the table's user list extended by ``new_users`` (-1: none);
    numeric columns use NaN for null.
    """

    kind: Sequence[int]
    user: Sequence[int]
    new_users: Sequence[str]
    request_id: Sequence[str | None]
    t: Sequence[float]
    cost: Sequence[float]
    v: Sequence[float]
    meter: Sequence[float]
    deficit: Sequence[float]

    def __len__(self) -> int:
        return len(self.kind)


class EventTable:
    def __init__(self, scheduler: str, weights: dict[str, float] | None = None) -> None:
        self.scheduler = scheduler
        self.users: list[str] = []
        self.user_code: dict[str, int] = {}
        self.weights = weights or {}
        self.kind = array("b")
        self.user = array("i")
        self.request_id: list[str | None] = []
        self.t = array("d")
        self.cost = array("d")
        self.v = array("d")
        self.meter = array("d")
        self.deficit = array("d")
        self.request_events: dict[str, list[int]] = {}
        self.dispatches = array("q")  # event indices of dispatches
        self.idle_resets = array("q")
        self.user_dispatches: list[array] = []  # per user code: its dispatch event indices
        self.complete = False

    def __len__(self) -> int:
        return len(self.kind)

    def weight(self, code: int) -> float:
        return self.weights.get(self.users[code], 1.0)

    def append(self, batch: EventBatch) -> None:
        start = len(self.kind)
        for name in batch.new_users:
            self.user_code[name] = len(self.users)
            self.users.append(name)
            self.user_dispatches.append(array("q"))
        self.kind.extend(batch.kind)
        self.user.extend(batch.user)
        self.request_id.extend(batch.request_id)
        self.t.extend(batch.t)
        self.cost.extend(batch.cost)
        self.v.extend(batch.v)
        self.meter.extend(batch.meter)
        self.deficit.extend(batch.deficit)
        events = self.request_events
        for offset, (kind, user, rid) in enumerate(zip(batch.kind, batch.user, batch.request_id)):
            k = start + offset
            if rid is not None:
                found = events.get(rid)
                if found is None:
                    events[rid] = [k]
                else:
                    found.append(k)
            if kind == DISPATCH:
                self.dispatches.append(k)
                self.user_dispatches[user].append(k)
            elif kind == IDLE_RESET:
                self.idle_resets.append(k)

    # Navigation helpers: all O(log n).

    def next_dispatch(self, k: int, user: int | None = None) -> int | None:
        seq = self.dispatches if user is None else self.user_dispatches[user]
        pos = bisect_right(seq, k)
        return seq[pos] if pos < len(seq) else None

    def previous_dispatch(self, k: int) -> int | None:
        pos = bisect_left(self.dispatches, k)
        return self.dispatches[pos - 1] if pos else None

    def next_idle_reset(self, k: int) -> int | None:
        pos = bisect_right(self.idle_resets, k)
        return self.idle_resets[pos] if pos < len(self.idle_resets) else None

    def at_time(self, t: float) -> int:
        """The last event at or before time t (0 when t is before the first)."""
        return max(0, bisect_right(self.t, t) - 1)

    def kind_name(self, k: int) -> str:
        return KINDS[self.kind[k]]

    def user_name(self, k: int) -> str | None:
        code = self.user[k]
        return None if code < 0 else self.users[code]

    def request_life(self, request_id: str) -> dict[str, int]:
        """Event indices of the request's arrive, dispatch, complete (and cancel)."""
        return {KINDS[self.kind[k]]: k for k in self.request_events.get(request_id, [])}

    def is_arrival(self, k: int) -> bool:
        return self.kind[k] == ARRIVE

    def is_cancel(self, k: int) -> bool:
        return self.kind[k] == CANCEL


def number(x: float) -> float | None:
    """NaN (our null) as None."""
    return None if x != x else x
