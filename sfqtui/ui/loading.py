"""The messages a run's loading worker posts.

The worker reads and replays on its own thread and only posts messages; the app appends
what they carry on its own thread, so no view ever sees a half-built table. Every
message names the run it belongs to by the run's key.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from sfqtui.core.analysis.audit import Violation
from sfqtui.core.log.shadow import Shadow, ShadowMismatch
from sfqtui.core.log.table import EventBatch, EventTable
from sfqtui.core.log.timeline import State
from sfqtui.live.bound import Bound
from sfqtui.live.stream import RunStarted, Status


class RunMessage(Message):
    def __init__(self, run: int) -> None:
        super().__init__()
        self.run = run


class Opened(RunMessage):
    def __init__(self, run: int, title: str, scheduler: str, metadata: dict[str, Any]) -> None:
        super().__init__(run)
        self.title, self.scheduler, self.metadata = title, scheduler, metadata


class EventsLoaded(RunMessage):
    """A batch of events, the checkpoints it completed on the grid ``every``, and how much
    of the source is loaded (None: the source never ends)."""

    def __init__(self, run: int, batch: EventBatch, checkpoints: list[State], every: int, fraction: float | None) -> None:
        super().__init__(run)
        self.batch, self.checkpoints, self.every, self.fraction = batch, checkpoints, every, fraction


class LoadFinished(RunMessage):
    pass


class LoadFailed(RunMessage):
    def __init__(self, run: int, reason: str) -> None:
        super().__init__(run)
        self.reason = reason


class ChartReady(RunMessage):
    """The shares chart, binned over the log loaded so far (of ``table``: a live run may have
    moved on to another table since, whose user codes are not these)."""

    def __init__(self, run: int, table: EventTable, users: list[int], edges: list[float], series: dict[int, list[float]]) -> None:
        super().__init__(run)
        self.table, self.users, self.edges, self.series = table, users, edges, series


class Analysed(RunMessage):
    """The audit of the complete log: the events that break an invariant (or why it failed)."""

    def __init__(self, run: int, violations: list[Violation], checked: bool, failure: str | None = None) -> None:
        super().__init__(run)
        self.violations, self.checked, self.failure = violations, checked, failure


class ShadowWarmed(RunMessage):
    """A shadow of the run's scheduler driven through its whole log, whose copies the
    view's shadow can take; or why the log cannot be followed."""

    def __init__(self, run: int, shadow: Shadow | None, mismatch: ShadowMismatch | None = None) -> None:
        super().__init__(run)
        self.shadow, self.mismatch = shadow, mismatch


class OutcomeMeasured(Message):
    """A lesson's measured outcome, one line per figure."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines


class ConnectionChanged(RunMessage):
    """A live source's connection (``status.state``: one of sfqtui.live.stream.STATES, or "closed")."""

    def __init__(self, run: int, status: Status) -> None:
        super().__init__(run)
        self.status = status


class BoundChanged(RunMessage):
    """A replica of a group says whether the group's bound holds (sfqtui.live.bound)."""

    def __init__(self, run: int, bound: Bound) -> None:
        super().__init__(run)
        self.bound = bound


class ProxyRunStarted(RunMessage):
    """A live source follows a proxy run: the first, or a new one after a restart (its
    events follow, from seq 0 and an empty state)."""

    def __init__(self, run: int, started: RunStarted) -> None:
        super().__init__(run)
        self.started = started


class WindowStarted(RunMessage):
    """A source that never ends starts a new window of events (after ``window`` events, or
    after a gap): a new table from ``first_seq``, whose state before event 0 is ``seed``."""

    def __init__(self, run: int, first_seq: int, seed: State, new_users: list[str], weights: list[float]) -> None:
        super().__init__(run)
        self.first_seq, self.seed, self.new_users, self.weights = first_seq, seed, new_users, weights


class LiveAudit(RunMessage):
    """A live stream's audit so far: the violations found (by seq), or why it stopped."""

    def __init__(self, run: int, violations: list[Violation], stopped: str | None) -> None:
        super().__init__(run)
        self.violations, self.stopped = violations, stopped
