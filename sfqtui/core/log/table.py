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

from sfqtui.core.engine.events import ARRIVE, DISPATCH, IDLE_RESET, KINDS
from sfqtui.core.log.rows import LogRows

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
    new_user_weights: Sequence[float]
    request_id: Sequence[str | None]
    t: Sequence[float]
    cost: Sequence[float]
    v: Sequence[float]
    meter: Sequence[float]
    deficit: Sequence[float]

    def __len__(self) -> int:
        return len(self.kind)


class EventTable:
    def __init__(self, scheduler: str) -> None:
        self.scheduler = scheduler
        self.users: list[str] = []
        self.user_code: dict[str, int] = {}
        self.weights: list[float] = []
        self.kind = array("b")
        self.user = array("i")
        self.request_id: list[str | None] = []
        self.t = array("d")
        self.cost = array("d")
        self.v = array("d")
        self.meter = array("d")
        self.deficit = array("d")
        self.dispatches = array("q")  # event indices of dispatches
        self.idle_resets = array("q")
        self.user_dispatches: list[array] = []  # per user code: its dispatch event indices
        self.user_arrivals: list[array] = []  # per user code: its arrival event indices
        self.size = 0
        self._by_name: list[int] = []

    def __len__(self) -> int:
        """Events fully appended (readers never see a half-appended batch)."""
        return self.size

    def weight(self, code: int) -> float:
        return self.weights[code]

    def users_by_name(self) -> list[int]:
        """User codes in name order (kept until new users arrive): a stable sort of this
        by any key breaks ties by name."""
        if len(self._by_name) != len(self.users):
            self._by_name = sorted(range(len(self.users)), key=self.users.__getitem__)
        return self._by_name

    def append(self, batch: EventBatch) -> None:
        start = len(self.kind)
        for name, weight in zip(batch.new_users, batch.new_user_weights):
            self.user_code[name] = len(self.users)
            self.users.append(name)
            self.weights.append(weight)
            self.user_dispatches.append(array("q"))
            self.user_arrivals.append(array("q"))
        self.kind.extend(batch.kind)
        self.user.extend(batch.user)
        self.request_id.extend(batch.request_id)
        self.t.extend(batch.t)
        self.cost.extend(batch.cost)
        self.v.extend(batch.v)
        self.meter.extend(batch.meter)
        self.deficit.extend(batch.deficit)
        kinds = batch.kind
        picks = [start + i for i, kind in enumerate(kinds) if kind == DISPATCH]
        self.dispatches.extend(picks)
        per_user = self.user_dispatches
        user = self.user
        for k in picks:
            per_user[user[k]].append(k)
        arrivals = self.user_arrivals
        for k in [start + i for i, kind in enumerate(kinds) if kind == ARRIVE]:
            arrivals[user[k]].append(k)
        self.idle_resets.extend(start + i for i, kind in enumerate(kinds) if kind == IDLE_RESET)
        self.size = len(self.kind)

    # Navigation helpers: all O(log n).

    def next_dispatch(self, k: int, user: int | None = None) -> int | None:
        seq = self.dispatches if user is None else self.user_dispatches[user]
        pos = bisect_right(seq, k)
        return seq[pos] if pos < len(seq) else None

    def dispatches_between(self, after: int, before: int) -> array:
        """Event indices of the dispatches strictly between two events."""
        return self.dispatches[bisect_right(self.dispatches, after) : bisect_left(self.dispatches, before)]

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

    def request_life(self, request_id: str, near: int | None = None) -> dict[str, int]:
        """Event indices of the request's arrive, dispatch, complete (and cancel).

        ``near``: an event of this request, when known. Each user's queue is FIFO, so the
        j-th dispatch of a user is its j-th arrival; positions found that way are checked
        against the request id, and a linear scan (in C, list.index) is the fallback.
        """
        ids = self.request_id
        if near is None or not 0 <= near < self.size or ids[near] != request_id:
            return self._scan_life(request_id, 0)
        u = self.user[near]
        arrivals, dispatches = self.user_arrivals[u], self.user_dispatches[u]
        kind = self.kind[near]
        arrive = dispatch = None
        if kind == ARRIVE:
            arrive = near
        elif kind == DISPATCH:
            dispatch = near
        else:  # complete or cancel: the dispatch is among the user's few in-flight requests
            for k in reversed(dispatches[: bisect_right(dispatches, near)]):
                if ids[k] == request_id:
                    dispatch = k
                    break
        if arrive is None and dispatch is not None:
            j = bisect_left(dispatches, dispatch)
            if j < len(arrivals) and ids[arrivals[j]] == request_id:
                arrive = arrivals[j]
        if arrive is None:
            return self._scan_life(request_id, 0)
        if dispatch is None:
            j = bisect_left(arrivals, arrive)
            if j < len(dispatches) and ids[dispatches[j]] == request_id:
                dispatch = dispatches[j]
        if dispatch is None:
            return self._scan_life(request_id, arrive)
        life = {"arrive": arrive, "dispatch": dispatch}
        life.update((KINDS[self.kind[k]], k) for k in self._find(request_id, dispatch + 1, 1))
        return life

    def _find(self, request_id: str, start: int, count: int) -> list[int]:
        found: list[int] = []
        k = start - 1
        while len(found) < count:
            try:
                k = self.request_id.index(request_id, k + 1, self.size)
            except ValueError:
                break
            found.append(k)
        return found

    def _scan_life(self, request_id: str, start: int) -> dict[str, int]:
        return {KINDS[self.kind[k]]: k for k in self._find(request_id, start, 4)}


    def log_rows(self) -> LogRows:
        """The loaded events as LogRows (for the audit)."""
        n = self.size
        users, weights, codes = self.users, self.weights, self.user[:n]
        return LogRows(
            scheduler=self.scheduler,
            seq=range(n),
            t=self.t[:n],
            kind=[KINDS[k] for k in self.kind[:n]],
            user=[users[u] if u >= 0 else None for u in codes],
            request_id=self.request_id[:n],
            cost=[number(x) for x in self.cost[:n]],
            v=[number(x) for x in self.v[:n]],
            meter=[number(x) for x in self.meter[:n]],
            deficit=[number(x) for x in self.deficit[:n]],
            weight=[weights[u] if u >= 0 else None for u in codes],
        )


def number(x: float) -> float | None:
    """NaN (our null) as None."""
    return None if x != x else x
