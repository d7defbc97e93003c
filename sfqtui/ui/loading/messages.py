"""The messages a run's loading worker posts.

The worker reads and replays on its own thread and only posts messages; the app appends
what they carry on its own thread, so no view ever sees a half-built table. Every
message names the run it belongs to by the run's key. A message that a later one of the
same run makes stale says so (``can_replace``), so a busy queue keeps only the newest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from threading import Event
from typing import Any

from textual.message import Message

from sfqtui.attach.bound import Bound
from sfqtui.attach.stream import RunStarted, Status
from sfqtui.core.analysis.audit import Violation
from sfqtui.core.analysis.fairness import FairnessReport
from sfqtui.core.log.shadow import Shadow, ShadowMismatch
from sfqtui.core.log.table import EventBatch, EventTable
from sfqtui.core.log.timeline import State


@dataclass
class RunMessage(Message):
    run: int


@dataclass
class Opened(RunMessage):
    title: str
    scheduler: str
    metadata: dict[str, Any]


@dataclass
class EventsLoaded(RunMessage):
    """A batch of events, the checkpoints it completed on the grid ``every``, and how much
    of the source is loaded (None: the source never ends)."""

    batch: EventBatch
    checkpoints: list[State]
    every: int
    fraction: float | None
    shown: Event | None = None  # set once a frame showing them is drawn (the loader waits for it after the first batch)


@dataclass
class LoadFinished(RunMessage):
    pass


@dataclass
class LoadFailed(RunMessage):
    reason: str


@dataclass
class ChartReady(RunMessage):
    """The shares chart, binned over the log loaded so far (of ``table``: a live run may have
    moved on to another table since, whose user codes are not these)."""

    table: EventTable
    users: list[int]
    edges: list[float]
    series: dict[int, list[float]]
    engine: FairnessReport | None = None  # the figures at engine start, when the log has start rows

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ChartReady) and message.run == self.run  # binned over more of the log


@dataclass
class Analysed(RunMessage):
    """The audit of the complete log: the events that break an invariant (or why it failed)."""

    violations: list[Violation]
    checked: bool
    failure: str | None = None


@dataclass
class ShadowWarmed(RunMessage):
    """A shadow of the run's scheduler driven through its whole log, whose copies the
    view's shadow can take; or why the log cannot be followed."""

    shadow: Shadow | None
    mismatch: ShadowMismatch | None = None


@dataclass
class OutcomeMeasured(Message):
    """A lesson's measured outcome, one line per figure."""

    lines: list[str]


@dataclass
class ConnectionChanged(RunMessage):
    """A live source's connection (``status.state``: one of sfqtui.attach.stream.STATES, or "closed")."""

    status: Status


@dataclass
class BoundChanged(RunMessage):
    """A replica of a group says whether the group's bound holds (sfqtui.attach.bound)."""

    bound: Bound


@dataclass
class LimitsChanged(RunMessage):
    """A proxy with --slots auto: each upstream's limit (their sum is the slots)."""

    limits: dict[str, int]


@dataclass
class ProxyRunStarted(RunMessage):
    """A live source follows a proxy run: the first, or a new one after a restart (its
    events follow, from seq 0 and an empty state)."""

    started: RunStarted


@dataclass
class WindowStarted(RunMessage):
    """A source that never ends starts a new window of events (after ``window`` events, or
    after a gap): a new table from ``first_seq``, whose state before event 0 is ``seed``."""

    first_seq: int
    seed: State
    new_users: list[str]
    weights: list[float]


@dataclass
class LiveAudit(RunMessage):
    """A live stream's audit so far: the violations found (by seq), or why it stopped."""

    violations: list[Violation] = field(default_factory=list)
    stopped: str | None = None

    def can_replace(self, message: Message) -> bool:
        # the violations so far, of the same proxy run: a later count holds the earlier one
        return isinstance(message, LiveAudit) and message.run == self.run and message.stopped is None and self.stopped is None
