"""Rebuild the scheduler's state at any event of a log, from the log alone.

State after event k is a function of events 0..k. Checkpoints every ``every`` events make
any seek cost at most ``every`` event applications, so stepping back and jumping never
replays from the start. A CheckpointBuilder takes them batch by batch as a log loads (or
streams), so the loaded part can be browsed while the rest arrives. Checkpoints are
sized to the log: when they would hold more than ``CHECKPOINT_BUDGET`` bytes, every
other one is dropped and the interval doubles, so a log that never ends still keeps
its checkpoints within the budget.

This is the one way a State is rebuilt: ``Checkpoints`` (a grid of states plus the last
few rebuilt) and ``apply_events``. A Timeline uses them over the whole log; each replica of
a replicated log uses them over its own events (replica_states.py). The Shadow (shadow.py)
is not a State but the scheduler object itself, re-driven event by event.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sfqtui.core.events import ARRIVE, CANCEL, COMPLETE, DISPATCH
from sfqtui.core.log.table import EventBatch, EventTable

CHECKPOINT_EVERY = 2048
CHECKPOINT_BUDGET = 96 << 20  # bytes of per-user state kept in checkpoints
USER_STATE_BYTES = 5 * 8 + 3 * 4  # the per-user arrays of a State
RECENT_STATES = 4


@dataclass
class State:
    """The rebuilt state after event ``k`` (k = -1: before any event).

    Per-user arrays are indexed by user code; ``value`` is the scheduler's own number
    (meter, counter or deficit; NaN before the user's first). ``busy_charged`` counts
    charges since the current busy period began (a busy period ends when nobody is
    queued after a dispatch or cancellation; semantics §3's global idle).
    ``dispatched_total`` is also the number of the next dispatch.
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
    value: array = field(default_factory=lambda: array("d"))
    charged: array = field(default_factory=lambda: array("d"))
    busy_charged: array = field(default_factory=lambda: array("d"))
    last_event: array = field(default_factory=lambda: array("q"))
    busy_epoch: array = field(default_factory=lambda: array("q"))
    queued: array = field(default_factory=lambda: array("i"))
    inflight_of: array = field(default_factory=lambda: array("i"))
    dispatched: array = field(default_factory=lambda: array("i"))

    def copy(self) -> State:
        return State(
            self.k, self.t, self.v, self.inflight, self.queued_total, self.c_max, self.charged_total,
            self.busy_total, self.busy_start, self.dispatched_total,
            self.value[:], self.charged[:], self.busy_charged[:], self.last_event[:], self.busy_epoch[:],
            self.queued[:], self.inflight_of[:], self.dispatched[:],
        )

    def busy(self, u: int) -> float:
        """User u's charges in the current busy period."""
        return self.busy_charged[u] if self.busy_epoch[u] == self.busy_start else 0.0

    def grow(self, users: int) -> None:
        missing = users - len(self.value)
        if missing > 0:
            self.value.extend(array("d", [float("nan")]) * missing)
            for column in (self.charged, self.busy_charged):
                column.extend(array("d", [0.0]) * missing)
            for column in (self.last_event, self.busy_epoch):  # -1: no event of this user yet
                column.extend(array("q", [-1]) * missing)
            for column in (self.queued, self.inflight_of, self.dispatched):
                column.extend(array("i", [0]) * missing)

    def start_window(self) -> None:
        """Become the state before event 0 of a new window: event and dispatch numbers
        count within a window, so those kept here are renumbered (the busy period goes on)."""
        self.k = -1
        self.dispatched_total = 0
        for u, epoch in enumerate(self.busy_epoch):
            self.busy_epoch[u] = -1 if epoch == self.busy_start and epoch >= 0 else -2
        self.busy_start = -1
        self.last_event = array("q", [-1]) * len(self.last_event)

    def backlogged(self) -> list[int]:
        return [u for u, q in enumerate(self.queued) if q > 0]


def over_budget(kept: int, users: int, budget: int) -> bool:
    """Whether ``kept`` checkpoints of ``users`` users' state hold more than ``budget`` bytes."""
    return kept * users * USER_STATE_BYTES > budget


class Checkpoints:
    """The states after the events of a grid (``states[0]``: before the first event), plus
    the last few states rebuilt from them, so a step forward applies one event. Returned
    states are shared with this cache, so callers only read them."""

    def __init__(self, base: State | None = None) -> None:
        self.states: list[State] = [base or State()]
        self._recent: list[State] = []

    def rebuild(self, slot: int, k: int, users: int, apply: Callable[[State], None]) -> State:
        """The state whose last event is ``k``: a recent one, or a copy of the nearer of
        checkpoint ``slot`` (clamped to those held) and a recent state before k, which
        ``apply`` brings up to k."""
        base = self.states[min(slot, len(self.states) - 1)]
        for recent in self._recent:
            if recent.k == k:
                recent.grow(users)
                return recent
            if base.k < recent.k < k:
                base = recent
        state = base.copy()
        state.grow(users)
        apply(state)
        self._recent = [state, *self._recent[: RECENT_STATES - 1]]
        return state


class CheckpointBuilder:
    """Walks a log batch by batch (on a loading worker) and snapshots every ``every`` events.

    ``every`` doubles whenever the checkpoints taken so far would exceed ``budget`` bytes;
    the consumer then keeps only the checkpoints on the new grid (``Timeline.add_checkpoints``).
    """

    def __init__(self, every: int = CHECKPOINT_EVERY, budget: int = CHECKPOINT_BUDGET) -> None:
        self.every = every
        self.budget = budget
        self._user_weights: list[float] = []
        self._head = State()
        self._kept = 0  # checkpoints on the current grid

    def add_users(self, weights: list[float]) -> None:
        """Users no batch introduces (known from a state snapshot), by code order."""
        self._user_weights += weights
        self._head.grow(len(self._user_weights))

    def new_window(self, seed: State | None = None) -> State:
        """Start a new window of events from ``seed`` (default: the state after the last
        event so far); returns the seed, as the state before the window's first event."""
        seed = (seed or self._head).copy()
        seed.grow(len(self._user_weights))
        seed.start_window()
        self._head = seed.copy()
        self._kept = 0
        return seed

    def consume(self, batch: EventBatch) -> list[State]:
        """Apply a batch; return the checkpoints it completed (states after events every-1,
        2*every-1, ...), on the grid ``every`` has after the call."""
        self._user_weights += batch.new_user_weights
        head = self._head
        if batch.start == 0 and head.k != -1:
            raise ValueError("a batch starting a new window needs new_window() first")
        head.grow(len(self._user_weights))
        end = batch.start + len(batch) - 1
        taken = []
        while head.k < end:
            until = min(end, (head.k + 1) // self.every * self.every + self.every - 1)
            apply_events(head, batch, batch.start, until, self._user_weights)
            if (head.k + 1) % self.every == 0:
                taken.append(head.copy())
                self._kept += 1
                while over_budget(self._kept, len(self._user_weights), self.budget):
                    self.every *= 2
                    self._kept //= 2
                    taken = [c for c in taken if (c.k + 1) % self.every == 0]
        return taken


class Timeline:
    """States at any loaded event, from checkpoints plus at most ``every`` applied events."""

    def __init__(self, table: EventTable, every: int = CHECKPOINT_EVERY, base: State | None = None) -> None:
        self.table = table
        self.every = every
        self._checkpoints = Checkpoints(base)

    def add_checkpoints(self, states: list[State], every: int | None = None) -> None:
        """Keep checkpoints made on the grid ``every`` (thinning the older ones to it)."""
        held = self._checkpoints
        if every is not None and every != self.every:
            self.every = every
            held.states = [c for c in held.states if (c.k + 1) % every == 0]
        held.states.extend(states)

    @property
    def checkpoints(self) -> int:
        return len(self._checkpoints.states) - 1

    def state_at(self, k: int) -> State:
        """State after event k; k is clamped to the events loaded so far."""
        table = self.table
        k = max(-1, min(k, len(table) - 1))
        return self._checkpoints.rebuild((k + 1) // self.every, k, len(table.users),
                                         lambda state: apply_events(state, table, 0, k, table.weights))


def apply_events(s: State, cols: EventTable | EventBatch, offset: int, until: int, weights: list[float] | array,
                 only: tuple[Sequence[int], Sequence[float]] | None = None) -> None:
    """Apply events s.k+1 .. until to s, in place; ``cols[k - offset]`` holds event k and
    ``cols.cost[n - first]`` the cost of dispatch number n, where ``first`` is the number
    of dispatches before ``cols`` (0 for a whole table). ``only``: apply just these events
    (ascending indices) and their dispatches' costs instead, as s counts its dispatches
    (one replica's, replica_states.py)."""
    kinds, users, ts, vs, values, costs = cols.kind, cols.user, cols.t, cols.v, cols.value, cols.cost
    first = cols.first_dispatch if isinstance(cols, EventBatch) else 0
    ks: Sequence[int] = range(s.k + 1, until + 1)
    if only is not None:
        events, costs = only
        first = 0
        ks = events[bisect_right(events, s.k) : bisect_right(events, until)]
    for k in ks:
        i = k - offset
        kind = kinds[i]
        u = users[i]
        s.t = ts[i]
        v = vs[i]
        if v == v:
            s.v = v
        if u >= 0:
            m = values[i]
            if m == m:
                s.value[u] = m
            s.last_event[u] = k
        if kind == ARRIVE:
            if s.queued_total == 0:
                s.busy_start = k
                s.busy_total = 0.0
            s.queued[u] += 1
            s.queued_total += 1
        elif kind == DISPATCH:
            cost = costs[s.dispatched_total - first]
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
