"""An append-only, columnar event log in memory: what every view reads.

Every source (a replay of a trace, a saved log, a live stream) appends batches of §7
events; nothing is ever rewritten. There is no Python object per event: numbers live in
typed arrays (NaN for null), users and requests as int codes. Columns that only
dispatches fill (cost, estimate, ratio) are kept once per dispatch; what is known per
request (its events, its actual output) once per request; request ids stay in the
source's own compact store (an Arrow string array), looked up only for what is shown.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from sfqtui.core.events import DISPATCH, KINDS
from sfqtui.core.log.placements import Placements
from sfqtui.core.schedulers.registry import REGISTRY, SchedulerTraits

NaN = math.nan
NONE = -1  # no user, no request, no such event


class RequestNames(Protocol):
    """Request ids by request code, held by the source that assigns the codes."""

    def __len__(self) -> int: ...

    def __getitem__(self, code: int) -> str: ...

    def find(self, name: str) -> int | None:
        """The code of a request id, if the source has seen it."""

    def containing(self, text: str) -> Collection[int]:
        """The codes of the request ids that contain ``text``, ignoring case, ascending."""

    def take(self, codes: Collection[int]) -> Sequence[str | None]:
        """The request ids of many codes at once, None for a negative code (for an export:
        the Arrow store gives an Arrow string array, without a Python object per id)."""


@dataclass(frozen=True)
class EventBatch:
    """A batch of events in seq order, ready to append, starting at event ``start``.

    ``user`` holds codes into the table's users extended by ``new_users`` (-1: none);
    ``req`` codes into ``names`` (-1: none), of which there are ``requests`` after this
    batch. ``cost``, ``est_output`` and ``ratio`` hold one value per dispatch of the
    batch, in order; ``first_dispatch`` is how many dispatches came before the batch.
    ``outputs`` pairs (request code, actual output tokens) from completions that carry
    them. Numeric columns use NaN for null. ``dispatch_events``, ``arrive_events``,
    ``finish_events`` (completions and cancellations) and ``idle_events`` are the event
    indices of those kinds, found by the source in bulk. ``replica``: the replica each
    event names (-1: none), for a log of several replicas (semantics §11); None otherwise.
    ``cached``: (event index, request code, cached prompt tokens) from the rows that say them
    (a replay's start rows, when its engines model their prefix caches, semantics §14; a proxy's
    complete rows, from its upstream's usage, and a replay's of its recording as it ran); None
    when the log says none. ``placed``: (event
    index, request code, upstream, predicted cached prompt tokens or -1) from the dispatch and
    start rows that name an upstream (``sfqtui.core.log.placements``).
    """

    start: int
    kind: Sequence[int]
    user: Sequence[int]
    new_users: Sequence[str]
    new_user_weights: Sequence[float]
    req: Sequence[int]
    requests: int
    names: RequestNames
    t: Sequence[float]
    v: Sequence[float]
    value: Sequence[float]
    first_dispatch: int
    cost: Sequence[float]
    est_output: Sequence[float]
    ratio: Sequence[float]
    dispatch_events: Sequence[int]
    arrive_events: Sequence[int]
    finish_events: Sequence[int]
    idle_events: Sequence[int]
    outputs: Sequence[tuple[int, int]] = ()
    replica: Sequence[int] | None = None
    cached: Sequence[tuple[int, int, int]] | None = None
    placed: Sequence[tuple[int, int, str, int]] = ()

    def __len__(self) -> int:
        return len(self.kind)


class EventTable:
    """The events loaded so far. ``value`` is the scheduler's own per-user number on each
    row: the meter S_i (SFQ), the counter C_i (VTC) or the deficit DC_i (DRR), as the
    scheduler registry says; ``v`` is NaN for schedulers without virtual time."""

    def __init__(self, scheduler: str, first_seq: int = 0) -> None:
        self.scheduler = scheduler
        self.first_seq = first_seq  # the seq of event 0 (a live window starts mid-stream)
        self.traits: SchedulerTraits | None = REGISTRY.get(scheduler)
        self.users: list[str] = []
        self.user_code: dict[str, int] = {}
        self.weights = array("d")
        self.names: RequestNames | None = None
        self.kind = array("b")
        self.user = array("i")
        self.req = array("i")
        self.t = array("d")
        self.v = array("d")
        self.value = array("d")
        self.dispatches = array("q")  # event index of each dispatch
        self.cost = array("d")  # per dispatch
        self.est_output = array("d")  # per dispatch
        self.ratio = array("d")  # per dispatch
        self.replica = array("i")  # per event, in a log of several replicas (-1: none); empty otherwise
        self.idle_resets = array("q")
        self.user_dispatches: list[array] = []  # per user code: its dispatch event indices
        self.user_waited: list[array] = []  # per user code: its total wait after each of its dispatches
        # Event indices in int32: a table holds fewer than 2**31 events (a window of a live
        # stream, or a log of up to hundreds of millions of requests).
        self.arrive_at = array("i")  # per request code: event index, or -1
        self.dispatch_at = array("i")
        self.finish_at = array("i")  # its complete or cancel event
        self.output = array("d")  # per request code: actual output tokens (NaN: unknown)
        self.cached: dict[int, int] | None = None  # per request code: its cached prompt tokens, once said (None: the log says none)
        self.placements = Placements()  # where requests were placed, per upstream
        self.size = 0
        self._by_name: list[int] = []

    def __len__(self) -> int:
        """Events fully appended (readers never see a half-appended batch)."""
        return self.size

    def weight(self, code: int) -> float:
        return self.weights[code]

    def continued(self, first_seq: int) -> EventTable:
        """An empty table for the next window of the same stream: the same users with the
        same codes, events from ``first_seq`` on."""
        table = EventTable(self.scheduler, first_seq)
        table.users, table.user_code, table.weights = list(self.users), dict(self.user_code), array("d", self.weights)
        table.user_dispatches = [array("i") for _ in self.users]
        table.user_waited = [array("d") for _ in self.users]
        return table

    def users_by_name(self) -> list[int]:
        """User codes in name order (kept until new users arrive): a stable sort of this
        by any key breaks ties by name."""
        if len(self._by_name) != len(self.users):
            self._by_name = sorted(range(len(self.users)), key=self.users.__getitem__)
        return self._by_name

    def add_user(self, name: str, weight: float) -> None:
        self.user_code[name] = len(self.users)
        self.users.append(name)
        self.weights.append(weight)
        self.user_dispatches.append(array("i"))
        self.user_waited.append(array("d"))

    def append(self, batch: EventBatch) -> None:
        if batch.start != len(self.kind):
            raise ValueError(f"a batch starting at event {batch.start} cannot follow {len(self.kind)} events")
        for name, weight in zip(batch.new_users, batch.new_user_weights):
            self.add_user(name, weight)
        self.names = batch.names
        missing = batch.requests - len(self.arrive_at)
        if missing > 0:
            for column in (self.arrive_at, self.dispatch_at, self.finish_at):
                column.extend(array("i", [NONE]) * missing)
            self.output.extend(array("d", [NaN]) * missing)
        self.kind.extend(batch.kind)
        self.user.extend(batch.user)
        self.req.extend(batch.req)
        self.t.extend(batch.t)
        self.v.extend(batch.v)
        self.value.extend(batch.value)
        self.cost.extend(batch.cost)
        self.est_output.extend(batch.est_output)
        self.ratio.extend(batch.ratio)
        if batch.replica is not None:
            self.replica.extend(batch.replica)
        user, req = self.user, self.req
        self.dispatches.extend(batch.dispatch_events)
        self.idle_resets.extend(batch.idle_events)
        per_user = self.user_dispatches
        for column, events in ((self.dispatch_at, batch.dispatch_events), (self.arrive_at, batch.arrive_events),
                               (self.finish_at, batch.finish_events)):
            for k in events:
                code = req[k]
                if code >= 0:
                    column[code] = k
        t, arrive_at, waited = self.t, self.arrive_at, self.user_waited
        for k in batch.dispatch_events:
            u, code = user[k], req[k]
            per_user[u].append(k)
            arrived = arrive_at[code] if code >= 0 else NONE
            total = waited[u][-1] if waited[u] else 0.0
            waited[u].append(total + (t[k] - t[arrived] if arrived >= 0 else 0.0))
        for code, tokens in batch.outputs:
            self.output[code] = tokens
        placements = self.placements
        for k, code, upstream, predicted in batch.placed:
            placements.place(k, code, upstream, None if predicted < 0 else predicted)
        if placements:
            for k in batch.finish_events:
                placements.finish(k, req[k])
        if batch.cached is not None:
            if self.cached is None:
                self.cached = {}
            for k, code, tokens in batch.cached:
                self.cached[code] = tokens
                placements.cached(k, code, tokens)
        self.size = len(self.kind)

    # Per-event lookups

    def kind_name(self, k: int) -> str:
        return KINDS[self.kind[k]]

    def user_name(self, k: int) -> str | None:
        code = self.user[k]
        return None if code < 0 else self.users[code]

    @property
    def replicated(self) -> bool:
        """The log is of several replicas (its events name them)."""
        return len(self.replica) > 0

    def replica_of(self, k: int) -> int | None:
        """The replica event k names (None: none, or a one-scheduler log)."""
        if not self.replica:
            return None
        rep = self.replica[k]
        return None if rep < 0 else rep

    def request_id(self, k: int) -> str | None:
        code = self.req[k]
        return None if code < 0 or self.names is None else self.names[code]

    def dispatch_number(self, k: int) -> int:
        """How many dispatches come before event k."""
        return bisect_left(self.dispatches, k)

    def cost_at(self, k: int) -> float:
        """The cost charged at event k (NaN unless it is a dispatch)."""
        if self.kind[k] != DISPATCH:
            return NaN
        return self.cost[bisect_left(self.dispatches, k)]

    def waits_until(self, u: int, k: int) -> tuple[int, float]:
        """How many of user u's requests were dispatched at or before event k, and their
        total wait (a request whose arrival is not in the log counts as no wait)."""
        n = bisect_right(self.user_dispatches[u], k)
        return n, (self.user_waited[u][n - 1] if n else 0.0)

    # Navigation: all O(log n)

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

    def nth_dispatch(self, n: int) -> int | None:
        """The event index of dispatch number n (from 0), if loaded."""
        return self.dispatches[n] if 0 <= n < len(self.dispatches) else None

    def next_idle_reset(self, k: int) -> int | None:
        pos = bisect_right(self.idle_resets, k)
        return self.idle_resets[pos] if pos < len(self.idle_resets) else None

    def at_time(self, t: float) -> int:
        """The last event at or before time t (-1 when t is before the first)."""
        return bisect_right(self.t, t, 0, self.size) - 1

    def request_life(self, request_id: str) -> dict[str, int]:
        """Event indices of the request's arrive, dispatch and complete (or cancel)."""
        code = self.names.find(request_id) if self.names is not None else None
        if code is None or code >= len(self.arrive_at):
            return {}
        return self.life_of(code)

    def life_of(self, code: int) -> dict[str, int]:
        life = {}
        for name, column in (("arrive", self.arrive_at), ("dispatch", self.dispatch_at), ("finish", self.finish_at)):
            k = column[code]
            if 0 <= k < self.size:
                life[KINDS[self.kind[k]] if name == "finish" else name] = k
        return life


def number(x: float) -> float | None:
    """NaN (our null) as None."""
    return None if x != x else x
