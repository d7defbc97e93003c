"""Rebuild the scheduler's state at any event of a log, from the log alone.

State after event k is a function of events 0..k. Checkpoints every ``every`` events make
any seek cost at most ``every`` event applications, so stepping back and jumping never
replays from the start. A CheckpointBuilder takes them batch by batch as a log loads (or
streams), so the loaded part can be browsed while the rest arrives.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from sfqtui.core.engine.events import ARRIVE, CANCEL, COMPLETE, DISPATCH
from sfqtui.core.log.table import EventBatch, EventTable

CHECKPOINT_EVERY = 2048
RECENT_STATES = 4


@dataclass
class State:
    """The rebuilt state after event ``k`` (k = -1: before any event).

    Per-user arrays are indexed by user code. ``busy_charged`` counts charges since the
    current busy period began (a busy period ends when nobody is queued after a dispatch
    or cancellation; semantics §3's global idle).
    """

    k: int = -1
    t: float = 0.0
    v: float = float("nan")
    inflight: int = 0
    queued_total: int = 0
    c_max: float = 0.0
    charged_total: float = 0.0
    busy_total: float = 0.0
    busy_start: int = -1
    dispatched_total: int = 0
    meter: array = field(default_factory=lambda: array("d"))
    deficit: array = field(default_factory=lambda: array("d"))
    queued: array = field(default_factory=lambda: array("q"))
    inflight_of: array = field(default_factory=lambda: array("q"))
    charged: array = field(default_factory=lambda: array("d"))
    busy_charged: array = field(default_factory=lambda: array("d"))
    dispatched: array = field(default_factory=lambda: array("q"))
    last_event: array = field(default_factory=lambda: array("q"))
    busy_epoch: array = field(default_factory=lambda: array("q"))

    def copy(self) -> State:
        return State(
            self.k, self.t, self.v, self.inflight, self.queued_total, self.c_max, self.charged_total,
            self.busy_total, self.busy_start, self.dispatched_total,
            self.meter[:], self.deficit[:], self.queued[:], self.inflight_of[:],
            self.charged[:], self.busy_charged[:], self.dispatched[:], self.last_event[:], self.busy_epoch[:],
        )

    def busy(self, u: int) -> float:
        """User u's charges in the current busy period."""
        return self.busy_charged[u] if self.busy_epoch[u] == self.busy_start else 0.0

    def grow(self, users: int) -> None:
        missing = users - len(self.meter)
        if missing > 0:
            nan = [float("nan")] * missing
            self.meter.extend(nan)
            self.deficit.extend(nan)
            for column in (self.queued, self.inflight_of, self.dispatched):
                column.extend([0] * missing)
            self.last_event.extend([-1] * missing)  # -1: no event of this user yet
            self.busy_epoch.extend([-1] * missing)
            self.charged.extend([0.0] * missing)
            self.busy_charged.extend([0.0] * missing)

    def backlogged(self) -> list[int]:
        return [u for u, q in enumerate(self.queued) if q > 0]


class CheckpointBuilder:
    """Walks a log batch by batch (on a loading worker) and snapshots every ``every`` events."""

    def __init__(self, every: int = CHECKPOINT_EVERY) -> None:
        self.every = every
        self._user_weights: list[float] = []
        self._head = State()

    def consume(self, batch: EventBatch) -> list[State]:
        """Apply a batch; return the checkpoints it completed (states after events every-1, 2*every-1, ...)."""
        self._user_weights += batch.new_user_weights
        head = self._head
        head.grow(len(self._user_weights))
        offset = head.k + 1
        end = offset + len(batch) - 1
        taken = []
        while head.k < end:
            until = min(end, (head.k + 1) // self.every * self.every + self.every - 1)
            apply_events(head, batch, offset, until, self._user_weights)
            if (head.k + 1) % self.every == 0:
                taken.append(head.copy())
        return taken


class Timeline:
    """States at any loaded event, from checkpoints plus at most ``every`` applied events.

    The last few states rebuilt are kept too: a step forward then starts from the state
    before it and applies one event. Returned states are shared with this cache, so
    callers only read them.
    """

    def __init__(self, table: EventTable, every: int = CHECKPOINT_EVERY) -> None:
        self.table = table
        self.every = every
        self._checkpoints: list[State] = [State()]
        self._recent: list[State] = []

    def add_checkpoints(self, states: list[State]) -> None:
        self._checkpoints.extend(states)

    def state_at(self, k: int) -> State:
        """State after event k; k is clamped to the events loaded so far."""
        table = self.table
        k = max(-1, min(k, len(table) - 1))
        base = self._checkpoints[min((k + 1) // self.every, len(self._checkpoints) - 1)]
        for recent in self._recent:
            if recent.k == k:
                recent.grow(len(table.users))
                return recent
            if base.k < recent.k < k:
                base = recent
        state = base.copy()
        state.grow(len(table.users))
        apply_events(state, table, 0, k, table.weights)
        self._recent = [state, *self._recent[: RECENT_STATES - 1]]
        return state


def apply_events(s: State, cols: EventTable | EventBatch, offset: int, until: int, weights: list[float]) -> None:
    """Apply events s.k+1 .. until to s, in place; ``cols[k - offset]`` holds event k."""
    kinds, users, ts, costs, vs, meters, deficits = (
        cols.kind, cols.user, cols.t, cols.cost, cols.v, cols.meter, cols.deficit)
    for k in range(s.k + 1, until + 1):
        i = k - offset
        kind = kinds[i]
        u = users[i]
        s.t = ts[i]
        v = vs[i]
        if v == v:
            s.v = v
        if u >= 0:
            m = meters[i]
            if m == m:
                s.meter[u] = m
            d = deficits[i]
            if d == d:
                s.deficit[u] = d
            s.last_event[u] = k
        if kind == ARRIVE:
            if s.queued_total == 0:
                s.busy_start = k
                s.busy_total = 0.0
            s.queued[u] += 1
            s.queued_total += 1
        elif kind == DISPATCH:
            cost = costs[i]
            s.queued[u] -= 1
            s.queued_total -= 1
            s.inflight_of[u] += 1
            s.inflight += 1
            s.charged[u] += cost
            if s.busy_epoch[u] != s.busy_start:
                s.busy_epoch[u] = s.busy_start
                s.busy_charged[u] = 0.0
            s.busy_charged[u] += cost
            s.charged_total += cost
            s.busy_total += cost
            s.dispatched[u] += 1
            s.dispatched_total += 1
            charge = cost / weights[u]
            if charge > s.c_max:
                s.c_max = charge
        elif kind == COMPLETE:
            s.inflight_of[u] -= 1
            s.inflight -= 1
        elif kind == CANCEL:
            s.queued[u] -= 1
            s.queued_total -= 1
        s.k = k
