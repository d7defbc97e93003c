"""A run: a source's events loaded into a table, its timeline, its cursor and how loading
goes; a run of a live stream (``LiveRun``) also follows the newest event and holds what
the stream said besides its events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from sfqtui.attach.bound import Bound, recorded_bound
from sfqtui.core.analysis.audit import Violation
from sfqtui.core.log.cursor import Cursor
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.log.table import EventBatch, EventTable
from sfqtui.core.log.timeline import CheckpointBuilder, State, Timeline
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.core.schedulers import REGISTRY
from sfqtui.runs.opening import rerunnable
from sfqtui.runs.protocols import RunOpening
from sfqtui.runs.stream_opening import LiveState, start_window
from sfqtui.trace.notices import WindowStarts

_keys = count(1)
LATE_VIOLATIONS = 100_000  # a live window's violations are placed up to this far past its end (the audit may be ahead)


@dataclass(eq=False)
class Run:
    """One source opened. ``key`` names this loading of it: messages about a run carry its
    key, and a re-run gets a new key, so late messages of the old one are ignored.

    ``loaded`` is the fraction loaded so far (a source that never ends makes a ``LiveRun``)."""

    opening: RunOpening
    scheduler: str = "sfq"
    title: str = ""
    slots: int | None = None
    key: int = field(default_factory=lambda: next(_keys))
    metadata: dict[str, Any] = field(default_factory=dict)  # what the source records (settings, quantum, ...)
    loaded: float | None = 0.0
    loading: bool = True
    started: bool = False  # its loading has begun
    live: LiveState | None = None  # a live stream's connection, proxy run and audit (None: a source that ends)
    broken: dict[int, list[Violation]] = field(default_factory=dict)  # event index -> the invariants it breaks
    checked: bool = False
    audit_failure: str | None = None

    def __post_init__(self) -> None:
        self._replicas: ReplicaStates | None = None
        self.reset(self.opening.scheduler)  # a saved log names its own when it opens

    def reset(self, scheduler: str) -> None:
        """Start over with an empty table (the source said which scheduler it replays)."""
        self.scheduler = scheduler
        self.table = EventTable(scheduler)
        self.timeline = Timeline(self.table)
        self.cursor = Cursor(self.table)

    def append(self, batch: EventBatch, checkpoints: list[State], every: int, fraction: float | None) -> None:
        self.table.append(batch)
        self.timeline.add_checkpoints(checkpoints, every)
        self.loaded = fraction

    def new_window(self, first_seq: int, seed: State, new_users: list[str], weights: list[float]) -> None:
        """Continue a source that never ends in a fresh table (the old one is let go)."""
        table = self.table.continued(first_seq)
        for name, weight in zip(new_users, weights):
            table.add_user(name, weight)
        self.table = table
        self.timeline = Timeline(table, base=seed)
        self.cursor = Cursor(table)

    def load_all(self) -> Run:
        """Load the whole source on this thread (headless tools and tests; the dashboard
        loads on a worker, batch by batch)."""
        source = self.opening.source()
        self.reset(source.scheduler)
        self.title, self.slots, self.metadata = source.title, source.metadata.get("slots"), source.metadata
        builder = CheckpointBuilder()
        for item, fraction in source.batches():
            match item:
                case EventBatch():
                    self.append(item, builder.consume(item), builder.every, fraction)
                case WindowStarts():
                    self.new_window(*start_window(item, builder))
                case _:  # a live source's other words: for the dashboard
                    pass
        self.loading = False
        return self

    @staticmethod
    def of(opening: RunOpening, title: str | None = None) -> Run:
        """A run about to load what ``opening`` opens (a live stream: with its live part, and no fraction loaded)."""
        title = opening.title if title is None else title
        live = opening.run_state()
        return Run(opening, title=title) if live is None else LiveRun(opening, title=title, live=live)

    @property
    def connection(self) -> str | None:
        """A live run's connection state (None for a source that ends, or before the first word of it)."""
        return None

    @property
    def following(self) -> bool:
        """Whether the cursor follows the newest event as it comes (only a live run's can)."""
        return False

    @property
    def limits(self) -> dict[str, int] | None:
        """Each upstream's limit: at the cursor in a replay that follows a recording's capacity
        (a live run of a proxy with --slots auto: as last heard)."""
        trace = rerunnable(self.opening)
        if trace is None or trace.config.capacity is None or self.cursor.k < 0:
            return None
        return trace.config.capacity.at(self.table.t[self.cursor.k])

    def bound(self) -> Bound | None:
        """Whether a group's bound holds at the cursor, as the log records it."""
        return recorded_bound(self.metadata, self.table.t[self.cursor.k] if self.cursor.k >= 0 else None)

    def toggle_following(self) -> bool:
        """Pause or resume following the newest event; False: there is none to follow (play the run instead)."""
        return False

    def moved(self) -> None:
        """The cursor was moved by a key (a live run follows the newest event only from there)."""

    def state(self) -> State:
        return self.timeline.state_at(self.cursor.k)

    @property
    def replicas(self) -> ReplicaStates | None:
        """Each replica's state, for a replay or log of several replicas (None otherwise). A
        live stream's events may name the replica of a group, but a group is one SFQ (semantics
        §12): only a run whose metadata records its replicas (§11) is shown per replica."""
        if not self.table.replicated or not ReplicaSettings.from_metadata(self.metadata.get("replicas")).replicated:
            return None
        found = self._replicas
        if found is None or found.table is not self.table:
            found = self._replicas = ReplicaStates(self.table, ReplicaSettings.from_metadata(self.metadata.get("replicas")))
        return found

    def why_unchecked(self) -> str:
        """Why the events that break an invariant are not known (while ``checked`` is False)."""
        traits = REGISTRY.get(self.scheduler)
        if self.audit_failure:
            return f"the log could not be checked: {self.audit_failure}"
        if self.loading or (traits is not None and traits.audit is not None):
            return "still checking the log"
        return "no invariants to check for this scheduler"

    @property
    def violations(self) -> Sequence[int]:
        return self.cursor.violations

    def place_violations(self, found: Sequence[Violation], before: int | None = None) -> None:
        """Mark the events of this table that break an invariant (``found`` by seq), for `x`
        and for the rule it names; ``before``: only events below that index (a live
        window's, which the stream's audit may be ahead of)."""
        first = self.table.first_seq
        self.broken = {}
        for v in found:
            k = v.seq - first
            if k >= 0 and (before is None or k < before):
                self.broken.setdefault(k, []).append(v)
        self.cursor.violations = sorted(self.broken)


@dataclass(eq=False)
class LiveRun(Run):
    """A run of a source that never ends (a live proxy's stream): no fraction loaded, and a
    ``live`` part, its connection, proxy run and audit, as the stream said them."""

    loaded: float | None = None
    live: LiveState = field(default_factory=LiveState)

    @property
    def connection(self) -> str | None:
        return self.live.connection

    @property
    def following(self) -> bool:
        return self.live.following

    @property
    def limits(self) -> dict[str, int] | None:
        return self.live.limits

    def bound(self) -> Bound | None:
        """The group's bound as the stream last said it."""
        return self.live.bound

    def toggle_following(self) -> bool:
        self.live.following = not self.live.following
        if self.live.following:
            self.cursor.end()
        return True

    def moved(self) -> None:
        self.live.following = self.cursor.k == len(self.table) - 1

    def new_window(self, first_seq: int, seed: State, new_users: list[str], weights: list[float]) -> None:
        """Continue in a fresh table, with the stream's violations so far placed in it."""
        super().new_window(first_seq, seed, new_users, weights)
        self.place_violations(self.live.violations, before=len(self.table) + LATE_VIOLATIONS)
