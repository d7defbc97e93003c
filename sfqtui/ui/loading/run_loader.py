"""The dashboard's background work for its runs: loading each one's source, auditing a
whole log, binning the shares chart, indexing replicas, warming a shadow, measuring a
lesson's outcome.

Each job is a plain method that runs on a worker's thread, reads a growing log only up
to a bound taken before, and only posts messages (sfqtui.ui.loading.messages): called with a host
that collects them, it runs without an app. ``RunLoader`` notes the run each worker works
for, so that the one handler of failures (OpenRuns) can say which run and stop its waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from threading import Event
from typing import Any, Protocol

from textual.message import Message
from textual.notifications import SeverityLevel
from textual.worker import Worker, get_current_worker

from sfqtui.attach.bound import Bound
from sfqtui.attach.source import AuditSoFar, AuditStopped, LimitsHeard, RecordingFailed
from sfqtui.attach.stream import RunStarted, Status
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.log.shadow import ShadowMismatch
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import CheckpointBuilder
from sfqtui.core.schedulers import REGISTRY
from sfqtui.runs.audit_job import violations
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.runs.stream_opening import start_window
from sfqtui.scenarios.lessons import Lesson
from sfqtui.trace.load import load_trace
from sfqtui.trace.notices import Notice, WindowStarts
from sfqtui.trace.sources import EventSource
from sfqtui.ui.loading.messages import (
    Analysed,
    BoundChanged,
    ChartReady,
    ConnectionChanged,
    EventsLoaded,
    LimitsChanged,
    LiveAudit,
    LoadFailed,
    LoadFinished,
    Opened,
    OutcomeMeasured,
    ProxyRunStarted,
    ShadowWarmed,
    WindowStarted,
)
from sfqtui.ui.panes.shares import shares_chart
from sfqtui.ui.side_by_side.teacher import Teacher

INDEX_STEP = 16_384  # events a replica-indexing worker takes at a time (the screen waits at most that long for it)
Stopped = Callable[[], bool]  # whether the job is no longer wanted (cancelled, or its run closed)
SHOWN_POLL_S = 0.02  # how often a loader waiting for the first events' frame looks whether it is stopped


def until_shown(shown: Event, stopped: Stopped) -> bool:
    """Wait until the first events are on screen: reading on meanwhile would take the
    interpreter from the drawing of them (seconds late on a big log). False if stopped first."""
    while not shown.wait(SHOWN_POLL_S):
        if stopped():
            return False
    return True


class LoaderHost(Protocol):
    """Where the jobs post and run: the app."""

    def post_message(self, message: Message) -> bool: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None) -> None: ...

    def run_worker(self, work: Callable[[], None] | Coroutine[Any, Any, None], *, group: str = "default", description: str = "",
                   exit_on_error: bool = True, thread: bool = False) -> Worker[None]: ...


class RunLoader:
    def __init__(self, host: LoaderHost, is_open: Callable[[Run], bool]) -> None:
        self._host = host
        self._is_open = is_open
        self.sources: dict[int, EventSource] = {}  # each loading run's source, by run key, to close at quit
        self.work_for: dict[Worker[None], int] = {}  # running workers, by the key of the run they work for

    def _start(self, run: Run, job: Callable[[Stopped], None], group: str, description: str) -> None:
        """Run ``job`` on a worker's thread for ``run``, told to stop once cancelled or once the run is closed."""
        def body() -> None:
            worker = get_current_worker()
            job(lambda: worker.is_cancelled or not self._is_open(run))

        worker = self._host.run_worker(body, thread=True, group=group, exit_on_error=False, description=description)
        self.work_for[worker] = run.key

    def start(self, run: Run) -> None:
        run.started = True
        self._start(run, lambda stopped: self.load(run, stopped), "load", "loading")

    def start_audit(self, run: Run) -> None:
        self._start(run, lambda stopped: self.audit(run, stopped), "audit", "checking the invariants")

    def start_chart(self, run: Run) -> None:
        """Bin the shares chart over the log loaded so far (it may still be growing)."""
        table, events = run.table, len(run.table)  # the bound: taken on the thread that appends
        self._start(run, lambda _stopped: self.chart(run, table, events), "chart", "binning the shares chart")

    def start_indexing(self, run: Run, replicas: ReplicaStates) -> None:
        self._start(run, lambda stopped: self.index_replicas(run, replicas, stopped), "replicas", "indexing each replica's events")

    def start_warming(self, run: Run, teacher: Teacher) -> None:
        self._start(run, lambda stopped: self.warm_shadow(run, teacher, stopped), "shadow", "following the scheduler's state")

    def start_outcome(self, lesson: Lesson, trace: Path) -> None:
        self._host.run_worker(lambda: self.outcome(lesson, trace), thread=True, group="lesson", exit_on_error=False,
                              description="measuring the lesson's outcome")

    def close_sources(self) -> None:
        """Stop every source that may be waiting on the network, so that its loading thread
        ends now (the process waits for it) instead of at its next event."""
        for source in list(self.sources.values()):
            source.close()

    # The jobs, each on a worker's thread.

    def load(self, run: Run, stopped: Stopped) -> None:
        post = self._host.post_message
        try:
            source = run.opening.source()
            self.sources[run.key] = source
            post(Opened(run.key, source.title, source.scheduler, source.metadata))
            builder = CheckpointBuilder()
            first = True
            try:
                for item, fraction in source.batches():
                    if stopped():
                        return
                    if isinstance(item, Notice):
                        builder = self.notice(run, builder, item)
                        continue
                    checkpoints = builder.consume(item)
                    shown = Event() if first else None
                    post(EventsLoaded(run.key, item, checkpoints, builder.every, fraction, shown))
                    if shown is not None and not until_shown(shown, stopped):
                        return
                    first = False
            finally:
                self.sources.pop(run.key, None)
                source.close()
        except ValueError as exc:  # an InputError, or a page past the checked ones that Arrow cannot read
            post(LoadFailed(run.key, str(exc)))
            return
        post(LoadFinished(run.key))

    def notice(self, run: Run, builder: CheckpointBuilder, notice: Notice) -> CheckpointBuilder:
        """What a source says besides its events; returns the checkpoint builder for the
        events that follow (a new proxy run starts afresh)."""
        post = self._host.post_message
        match notice:
            case Status():
                post(ConnectionChanged(run.key, notice))
            case RecordingFailed():
                self._host.notify(notice.problem, title="recording", severity="error", timeout=30)
            case RunStarted():
                post(ProxyRunStarted(run.key, notice))
                builder = CheckpointBuilder()
            case Bound():
                post(BoundChanged(run.key, notice))
            case LimitsHeard():
                post(LimitsChanged(run.key, notice.limits))
            case AuditSoFar():
                post(LiveAudit(run.key, notice.violations))
            case AuditStopped():
                post(LiveAudit(run.key, [], notice.reason))
            case WindowStarts():
                post(WindowStarted(run.key, *start_window(notice, builder)))
        return builder

    def chart(self, run: Run, table: EventTable, events: int) -> None:
        self._host.post_message(ChartReady(run.key, table, *shares_chart(table, events)))

    def audit(self, run: Run, stopped: Stopped) -> None:
        """Once the log is complete: the audit of its invariants, if its scheduler has any."""
        traits = REGISTRY.get(run.scheduler)
        post = self._host.post_message
        if traits is None or traits.audit is None or not isinstance(run.opening, Opening):  # a live run keeps its stream's audit (OpenRuns)
            post(Analysed(run.key, [], checked=False))
            return
        try:
            found = violations(run.opening, len(run.table), cancelled=stopped)
        except (RuntimeError, ValueError) as exc:  # an InputError is a ValueError
            post(Analysed(run.key, [], checked=False, failure=str(exc)))
            return
        if found is not None:
            post(Analysed(run.key, found, checked=True))

    def index_replicas(self, run: Run, replicas: ReplicaStates, stopped: Stopped) -> None:
        """Index every replica's events and take their checkpoints through the whole log, a
        step at a time, so that a far jump on the screen finds them done."""
        for upto in range(0, len(run.table), INDEX_STEP):
            if stopped():
                return
            replicas.extend(upto + INDEX_STEP - 1)

    def warm_shadow(self, run: Run, teacher: Teacher, stopped: Stopped) -> None:
        """Drive a shadow of the run's scheduler through its whole log, so that the pane's
        first far jump takes its copies instead of re-driving the log from the start."""
        try:
            warmed = teacher.warmed(run, stopped)
        except ShadowMismatch as mismatch:
            self._host.post_message(ShadowWarmed(run.key, None, mismatch))
            return
        if warmed is not None:
            self._host.post_message(ShadowWarmed(run.key, warmed))

    def outcome(self, lesson: Lesson, trace: Path) -> None:
        self._host.post_message(OutcomeMeasured(lesson.outcome(load_trace(trace).trace)))
