"""The scheduler itself, re-driven from a log, so a view can show its own state at any event.

The event table keeps one number per user and event; what decides the next pick is
richer: DRR's active list, the visit in progress and the quantum, FIFO's line, RR's
turn order. A Shadow rebuilds it by feeding the log's events to the real core scheduler:
arrivals to ``arrive``, dispatches to ``dispatch`` with the cost the log charged,
completions to ``complete`` (VTC: with the charge that gives the counter the log shows),
cancellations to ``cancel``, idle resets to ``idle_reset``. The scheduler must pick the
request the log dispatched; when it does not, the log was not made by this scheduler
with these settings, and ``ShadowMismatch`` says where.

Deep copies every ``every`` events make ``at(k)`` cost at most ``every`` event
applications. When more than ``keep`` copies would be held, every other one is dropped
and the interval doubles, so a long log keeps a bounded number of copies. A seek that
starts again from one of those copies also takes up to ``LOCAL_KEEP`` finer ones on its
way, kept until the next such seek, so stepping back from there is quick too. A shadow
driven through a whole log on another thread can hand its copies to the one a view
uses (``adopt``), so the view's first far jump need not re-drive the log.

Why this is not timeline.py's State: a State is what the log records (each user's
number, queues, charges), rebuilt by applying events to arrays, whichever scheduler made
the log. What a Shadow shows exists only inside the scheduler object, so its copies are
clones of that object and each event is a call on it, checked against the log. The seek
is the same as a Timeline's: the nearest copy at or before k, then events forward.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sfqtui.core.events import ARRIVE, CANCEL, COMPLETE, DISPATCH, GAP, IDLE_RESET
from sfqtui.core.log.table import EventTable
from sfqtui.core.schedulers import Scheduler, make_scheduler, traits

SHADOW_EVERY = 256
SHADOW_KEEP = 128
LOCAL_KEEP = 16
LOCAL_MIN = 256  # a re-drive this short takes no finer copies


class ShadowMismatch(ValueError):
    """The log cannot have been made by the shadowed scheduler with these settings."""


@dataclass(frozen=True)
class Look:
    """A head request the scheduler priced while making a dispatch: whose, which (its
    request code), what it costs, and the user's deficit at that moment (DRR, else None)."""

    user: str
    request: int
    cost: float
    credit: float | None


class Shadow:
    """The shadowed scheduler after any loaded event of ``table``.

    ``at(k)`` returns the live scheduler object, shared with this shadow: callers only
    read it, and only until their next call to the shadow.
    """

    def __init__(self, table: EventTable, quantum: float | None = None, every: int = SHADOW_EVERY, keep: int = SHADOW_KEEP) -> None:
        if every < 1 or keep < 1:
            raise ValueError("a shadow needs every >= 1 and keep >= 1")
        self.table = table
        self.traits = traits(table.scheduler)
        self.quantum = quantum
        self.every = every
        self.keep = keep
        self._weights: dict[str, float] = {}
        self._users_seen = 0
        self._checkpoints: list[tuple[int, Scheduler]] = []
        self._local: list[tuple[int, Scheduler]] = []  # finer copies, taken by the last seek that started from a checkpoint
        self._local_every = 0  # while such a seek runs: the events between its copies
        self._k = -1
        self._current = self._fresh()
        self._watch: list[Look] | None = None

    @classmethod
    def of_run(cls, table: EventTable, metadata: Mapping[str, Any]) -> Shadow:
        """The shadow of a run's table, with the quantum its source recorded (DRR)."""
        return cls(table, metadata.get("quantum"))

    def _fresh(self) -> Scheduler:
        return make_scheduler(self.table.scheduler, dict(self._weights), self.quantum)

    def _note_new_users(self) -> None:
        """Start over when a user with a weight other than 1 appeared since the scheduler was
        built (a log still loading): schedulers hold their weights from construction, and a
        weight of 1 charges the same as none."""
        table = self.table
        weighted = False
        for code in range(self._users_seen, len(table.users)):
            if table.weights[code] != 1.0:
                self._weights[table.users[code]] = table.weights[code]
                weighted = True
        self._users_seen = len(table.users)
        if weighted:
            self._checkpoints, self._local = [], []
            self._k = -1
            self._current = self._fresh()

    def at(self, k: int) -> Scheduler:
        """The scheduler after event k (k = -1: before any event); k is clamped to the loaded events."""
        self._note_new_users()
        k = max(-1, min(k, len(self.table) - 1))
        base_k, base = _latest(self._checkpoints, k)
        local_k, local = _latest(self._local, k)
        # Start from whichever is nearest before k: where the shadow is, a finer copy, a copy.
        here = self._k if self._k <= k else -2
        if local is not None and local_k > max(here, base_k):
            self._current, self._k = local.clone(), local_k
        elif base_k > here:
            self._current = self._fresh() if base is None else base.clone()
            self._k = base_k
            if k - base_k > LOCAL_MIN:
                self._local, self._local_every = [], max(LOCAL_MIN, (k - base_k) // LOCAL_KEEP)
        try:
            self._advance(k)
        finally:
            self._local_every = 0
        return self._current

    @property
    def reach(self) -> int:
        """The last event with a copy taken after it (-1: none)."""
        return self._checkpoints[-1][0] if self._checkpoints else -1

    def adopt(self, other: Shadow) -> None:
        """Take the copies of another shadow of the same log and settings, if they reach
        further than this one's. The copies are only ever cloned, never changed, so both
        shadows may hold them; this one starts again from the copy nearest its next seek."""
        if other.table is not self.table or other.quantum != self.quantum or other.reach <= self.reach:
            return
        self._weights, self._users_seen = dict(other._weights), other._users_seen
        self._checkpoints, self.every = list(other._checkpoints), other.every
        self._local = []
        self._current, self._k = self._fresh(), -1

    def looks(self, k: int) -> tuple[Look, ...]:
        """The head requests the scheduler priced while making dispatch k, in order; the
        last is the one it sent. Leaves the shadow at k."""
        if not 0 <= k < len(self.table) or self.table.kind[k] != DISPATCH:
            return ()
        self.at(k - 1)
        self._watch = []
        try:
            self._advance(k)
            return tuple(self._watch)
        finally:
            self._watch = None

    def _advance(self, until: int) -> None:
        every, local_every, start = self.every, self._local_every, self._k
        for k in range(self._k + 1, until + 1):
            try:
                self._apply(k)
            except Exception:
                # the event may have half-changed the scheduler: the next seek starts again from a checkpoint
                self._current, self._k = self._fresh(), -1
                raise
            self._k = k
            if (k + 1) % every == 0 and (not self._checkpoints or self._checkpoints[-1][0] < k):
                self._checkpoints.append((k, self._current.clone()))
                if len(self._checkpoints) > self.keep:
                    self.every = every = every * 2
                    self._checkpoints = [c for c in self._checkpoints if (c[0] + 1) % every == 0]
            elif local_every and (k - start) % local_every == 0 and k < until:
                self._local.append((k, self._current.clone()))

    def _apply(self, k: int) -> None:
        table, sched = self.table, self._current
        kind = table.kind[k]
        if kind == IDLE_RESET:
            sched.idle_reset()
            return
        if kind == GAP:
            raise ShadowMismatch(f"event {k} is a gap: events were lost there, so {table.scheduler}'s state cannot be rebuilt past it")
        user = table.users[table.user[k]]
        req = table.req[k]
        if kind == ARRIVE:
            sched.arrive(req, user)
        elif kind == DISPATCH:
            sent, sent_user = sched.dispatch(self._cost_of)[:2]
            if sent != req:
                raise ShadowMismatch(
                    f"event {k}: the log dispatches {table.request_id(k)} of {user}, but {table.scheduler} "
                    f"with these settings picks {table.names[sent] if table.names else sent} of {sent_user}"
                )
        elif kind == COMPLETE:
            sched.complete(req, user, self._actual_charge(k, user) if self.traits.charges == "actual" else 0.0)
        elif kind == CANCEL:
            sched.cancel(req, user)

    def _cost_of(self, req: int) -> float:
        """The cost the log charged when it dispatched ``req``."""
        table = self.table
        k = table.dispatch_at[req] if 0 <= req < len(table.dispatch_at) else -1
        if not 0 <= k < len(table):
            name = table.names[req] if table.names is not None and 0 <= req < len(table.names) else req
            raise ShadowMismatch(f"{table.scheduler} prices request {name}, whose dispatch is not in the loaded log, so its cost is unknown")
        cost = table.cost_at(k)
        if self._watch is not None:
            user = table.users[table.user[k]]
            self._watch.append(Look(user, req, cost, self._current.reading(user)[2]))
        return cost

    def _actual_charge(self, k: int, user: str) -> float:
        """The completion charge that takes the user's counter to the one the log shows after event k."""
        before = self._current.reading(user)[1]
        after = self.table.value[k]
        if before is None or after != after:
            raise ShadowMismatch(f"event {k}: the log does not show {user}'s counter after this completion")
        charge = charge_between(before, after, self._current.weight(user))
        if charge is None:
            raise ShadowMismatch(f"event {k}: no completion charge takes {user}'s counter from {before!r} to {after!r}")
        return charge


def _latest(copies: list[tuple[int, Scheduler]], k: int) -> tuple[int, Scheduler | None]:
    """The copy taken at the latest event at or before k: (its event, it); (-1, None) if none."""
    for copy_k, state in reversed(copies):
        if copy_k <= k:
            return copy_k, state
    return -1, None


def charge_between(before: float, after: float, weight: float) -> float | None:
    """The charge c with ``before + c / weight == after`` in floating point (VTC's completion).

    The increase times the weight is c up to rounding; a step of an ulp or two puts it
    where that arithmetic lands exactly on ``after``. None when no nearby c does.
    """
    charge = (after - before) * weight
    for _ in range(4):
        landed = before + charge / weight
        if landed == after:
            return charge
        charge = math.nextafter(charge, math.inf if landed < after else -math.inf)
    return None
