"""Each replica's own state at any event of a replicated log (semantics §11), from the log alone.

Under share ``none`` and ``sync`` every replica has its own meters, v, queues and slots:
replica r's state after event k is the State (timeline.py) of replica r's own events up to
k (its arrivals, dispatches, completions, idle resets and sync rows). Under ``global`` there
is one scheduler: a replica's state counts the requests it holds (queued, in flight, sent),
and its meters and v are the one scheduler's, read from the whole log's state.

Each replica's state is rebuilt the one way a Timeline's is (timeline.py's Checkpoints
and apply_events), over the replica's own events: they are indexed as far as the cursor
has gone (``extend``), with a checkpoint every ``every`` of them (doubled whenever the
checkpoints of all replicas would hold more than ``budget`` bytes), so a seek applies at
most ``every`` events.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import replace
from threading import Lock

from sfqtui.core.events import DISPATCH
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import CHECKPOINT_BUDGET, CHECKPOINT_EVERY, Checkpoints, State, Timeline, apply_events, over_budget
from sfqtui.core.replicas.settings import ReplicaSettings


class ReplicaStates:
    """The replicas of one replicated log. ``count``: how many (the metadata's, or as many
    as its events name); ``split``: each has its own scheduler (share none or sync)."""

    def __init__(self, table: EventTable, settings: ReplicaSettings | None = None, every: int = CHECKPOINT_EVERY,
                 budget: int = CHECKPOINT_BUDGET) -> None:
        self.table = table
        self.budget = budget
        self._lock = Lock()  # a worker may index ahead (the dashboard's) while the screen reads
        self._kept = 0  # checkpoints over all replicas
        self.settings = settings
        self.split = settings is None or settings.share.splits_slots
        self.every = every
        self.count = settings.count if settings is not None and settings.replicated else 0
        self.events: list[array] = []  # per replica: the indices of its events
        self.costs: list[array] = []  # per replica: the cost of each of its dispatches
        self._checkpoints: list[Checkpoints] = []  # per replica: the states after its every-th, 2 every-th, ... event
        self._heads: list[State] = []  # per replica: the state after its last checkpointed event
        self._indexed = 0  # events of the table indexed so far
        self._dispatches = 0  # dispatches among them
        self._grow(self.count)

    def _grow(self, count: int) -> None:
        while len(self.events) < count:
            self.events.append(array("q"))
            self.costs.append(array("d"))
            self._checkpoints.append(Checkpoints())
            self._heads.append(State())
        self.count = max(self.count, count)

    def extend(self, upto: int) -> None:
        """Index every event up to ``upto`` (clamped to the table)."""
        with self._lock:
            self._extend(upto)

    def _extend(self, upto: int) -> None:
        table = self.table
        upto = min(upto, len(table) - 1)
        if upto < self._indexed or not table.replicated:
            return
        replica, kinds, costs = table.replica, table.kind, table.cost
        users = len(table.users)
        d = self._dispatches
        for k in range(self._indexed, upto + 1):
            r = replica[k]
            dispatch = kinds[k] == DISPATCH
            if r >= 0:
                if r >= self.count:
                    self._grow(r + 1)
                events = self.events[r]
                events.append(k)
                if dispatch:
                    self.costs[r].append(costs[d])
                if len(events) % self.every == 0:
                    head = self._heads[r]
                    head.grow(users)
                    apply_events(head, table, 0, k, table.weights, (events, self.costs[r]))
                    self._checkpoints[r].states.append(head.copy())
                    self._kept += 1
                    while over_budget(self._kept, users, self.budget):
                        self._thin()
            if dispatch:
                d += 1
        self._indexed = upto + 1
        self._dispatches = d

    def _thin(self) -> None:
        """Double the interval between checkpoints, keeping those on the new grid."""
        self.every *= 2
        for checkpoints in self._checkpoints:
            checkpoints.states = checkpoints.states[::2]
        self._kept = sum(len(c.states) - 1 for c in self._checkpoints)

    def state_at(self, r: int, k: int, overall: State | None = None) -> State:
        """Replica r's state after event k, its time that of event k. Under share global,
        ``overall`` (the whole log's state after k) gives the meters, v and c_max. Returned
        states share arrays with the cache, so callers only read them."""
        with self._lock:
            return self._state_at(r, k, overall)

    def _state_at(self, r: int, k: int, overall: State | None) -> State:
        self._extend(k)
        table = self.table
        if r >= self.count:
            self._grow(r + 1)
        events, costs = self.events[r], self.costs[r]
        upto = bisect_right(events, k)  # the replica's events at or before k
        last = events[upto - 1] if upto else -1
        state = self._checkpoints[r].rebuild(upto // self.every, last, len(table.users),
                                             lambda fresh: apply_events(fresh, table, 0, k, table.weights, (events, costs)))
        t = table.t[k] if 0 <= k < len(table) else state.t
        if not self.split and overall is not None:
            return replace(state, t=t, v=overall.v, c_max=overall.c_max, value=overall.value)
        return replace(state, t=t)

    def of_event(self, k: int) -> int | None:
        """The replica event k names (None: none)."""
        return self.table.replica_of(k)



class ReplicaTimeline(Timeline):
    """One replica's states read as a timeline, for what is told from a timeline's states
    (the narration) about one replica."""

    def __init__(self, replicas: ReplicaStates, replica: int) -> None:
        super().__init__(replicas.table)
        self.replicas = replicas
        self.replica = replica

    def state_at(self, k: int) -> State:
        return self.replicas.state_at(self.replica, k)
