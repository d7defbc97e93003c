"""The dashboard's runs and what their loading says: the first run is the one the keys move
(the others follow it in lockstep); each one's table, timeline and audit are kept up to
date as its source delivers.

The app holds one ``OpenRuns`` and hands it every run message (``take``) and every
worker's end (``worker_changed``); what that changes on screen goes through the small
``RunsScreen`` interface the app implements, so the runs are tested with a stand-in
screen. A worker that fails is reported here, once: what failed, for which run, and that
run stops waiting for it; the app goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from textual.worker import Worker, WorkerState

from sfqtui.core.analysis.fairness import FairnessReport
from sfqtui.core.gcpause import keep_out_of_collections
from sfqtui.core.numbers import count
from sfqtui.runs.protocols import RunOpening
from sfqtui.runs.run import LiveRun, Run
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
    ProxyRunStarted,
    RunMessage,
    ShadowWarmed,
    WindowStarted,
)
from sfqtui.ui.loading.run_loader import LoaderHost, RunLoader
from sfqtui.ui.side_by_side.teacher import Teacher
from sfqtui.ui.stream.connection import Link
from sfqtui.ui.stream.follower import LiveFollower, Toast


class RunsScreen(LoaderHost, Protocol):
    """What the runs' loading changes on screen: the app."""

    @property
    def drawing(self) -> bool:
        """False once the app closes: a late message has nothing to draw on."""
        ...

    def refresh_views(self) -> None: ...

    def call_after_refresh(self, callback: Callable[[], object]) -> bool: ...

    def show_title(self, title: str) -> None: ...

    def show_progress(self, fraction: float | None = None, done: bool | None = None) -> None: ...

    def use_table(self, run: Run) -> None:
        """The leading log lists ``run``'s table."""
        ...

    def show_chart(self, users: list[int], edges: list[float], series: dict[int, list[float]],
                   engine: FairnessReport | None = None) -> None: ...

    def show_waiting(self, text: str | None) -> None:
        """The log's message while the live run shown has no event (None: it has some)."""
        ...

    def follow(self) -> None:
        """Put the other runs at the leading run's moment (lockstep)."""
        ...

    def autoplay(self) -> None: ...


@runtime_checkable
class ReportsWorkers(Protocol):
    """An app whose one handler says what background work failed (a screen's workers report to it)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None: ...


class OpenRuns:
    def __init__(self, screen: RunsScreen, openings: Sequence[RunOpening], teacher: Teacher, autoplay: bool = False) -> None:
        self.runs: list[Run] = [Run.of(o) for o in openings]
        self.teacher = teacher  # the side-by-side panes' shadows, warmed once a log is whole
        self.live = LiveFollower()
        self.loader = RunLoader(screen, self.is_open)
        self._screen = screen
        self._autoplay = autoplay

    @property
    def current(self) -> Run:
        """The run the views show and the keys move (the others follow it in lockstep)."""
        return self.runs[0]

    @property
    def side_by_side(self) -> bool:
        return len(self.runs) > 1

    def is_open(self, run: Run) -> bool:
        return run in self.runs or run in self.live.offstage

    def link_of(self, run: Run) -> Link | None:
        return self.live.link_of(run, self.runs)

    def live_run(self) -> Run | None:
        return self.live.live_run(self.runs)

    def start(self, run: Run) -> None:
        if run is self.current:
            self._screen.show_progress(done=False)
        self.loader.start(run)

    def start_followers(self) -> None:
        """The leading run loads first, so its events are on screen as soon as they can be;
        the others start once it has shown some (or could not open)."""
        for run in self.runs[1:]:
            if run.loading and not run.started:
                self.start(run)

    def chart_growing(self) -> None:
        for run in self.runs:
            if run.loading and len(run.table):
                self.loader.start_chart(run)

    def show_table(self, run: Run) -> None:
        """The views list another table (a new proxy run's, or an earlier one's): the chart of the one before goes."""
        self._screen.use_table(run)
        self._screen.show_chart([], [], {})
        if len(run.table):
            self.loader.start_chart(run)

    def show_waiting(self, run: Run) -> None:
        if self._screen.drawing and not self.side_by_side and run is self.current:
            self._screen.show_waiting(self.live.waiting(run))

    def tick(self) -> None:
        """Every second: a live run's countdown to its next attempt moves."""
        live = self.live.counting_down(self.runs)
        if live is not None:
            self._screen.refresh_views()
            self.show_waiting(live)

    def _say(self, toast: Toast | None) -> None:
        if toast is not None:
            self._screen.notify(toast.message, title=toast.title, severity=toast.severity, timeout=toast.timeout)

    def take(self, message: RunMessage) -> None:
        """A message of a run's loading: taken in if that run is still open (a re-run replaces its key)."""
        run = next((run for run in (*self.runs, *self.live.offstage) if run.key == message.run), None)
        if run is None or not self._screen.drawing:  # closed, or the app closing
            if isinstance(message, EventsLoaded) and message.shown is not None:
                message.shown.set()  # nothing to wait for
            return
        match message:
            case Opened():
                self._opened(run, message)
            case EventsLoaded():
                self._events_loaded(run, message)
            case LoadFinished():
                self._load_finished(run)
            case LoadFailed():
                self._load_failed(run, message)
            case ChartReady():
                self._chart_ready(run, message)
            case Analysed():
                self._analysed(run, message)
            case ConnectionChanged() | ProxyRunStarted() | BoundChanged() | LimitsChanged() | LiveAudit() if isinstance(run, LiveRun):
                self._stream_said(run, message)
            case ShadowWarmed() if message.mismatch is not None:
                self.teacher.refuse(run, message.mismatch)
                self._screen.refresh_views()
            case ShadowWarmed() if message.shadow is not None:
                self.teacher.adopt(run, message.shadow)
            case WindowStarted():  # a stream's next window, or a saved log that starts from a snapshot of the proxy's state
                run.new_window(message.first_seq, message.seed, message.new_users, message.weights)

    def worker_changed(self, event: Worker.StateChanged) -> None:
        """The one place where background work that failed is reported: a notification says
        what failed and for which run, that run stops waiting for it, and the app goes on."""
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        key = self.loader.work_for.pop(event.worker, None)
        if event.state == WorkerState.ERROR and self._screen.drawing:
            self._failed(event.worker, next((run for run in self.runs if run.key == key), None))

    def _failed(self, worker: Worker[object], run: Run | None) -> None:
        error = worker.error
        what = f"{worker.description or worker.name}{f' {run.title}' if run is not None else ''}"
        said = f"{what} failed: {type(error).__name__}: {error}"
        self._screen.notify(f"{said}\n(a bug in sfqtui: the rest goes on)", title="background work failed", severity="error", timeout=30)
        if run is None:
            return
        if worker.group == "load":
            run.loading = False
            if run is self.current:
                self.start_followers()
                self._screen.show_progress(done=True)
        elif worker.group == "audit":
            run.checked, run.audit_failure = False, said
        self._screen.refresh_views()

    # Each message, for its run.

    def _opened(self, run: Run, message: Opened) -> None:
        run.reset(message.scheduler)
        run.title, run.metadata, run.slots = message.title, message.metadata, message.metadata.get("slots")
        if run is self.current:
            self._screen.show_title(message.title)
        if not self.side_by_side and run is self.current:
            self._screen.use_table(run)

    def _events_loaded(self, run: Run, message: EventsLoaded) -> None:
        first = len(run.table) == 0
        run.append(message.batch, message.checkpoints, message.every, message.fraction)
        if first and run is self.current:
            self.start_followers()
            self.show_waiting(run)
        if run.following:
            run.cursor.end()
        keep_out_of_collections()  # long-lived objects now sit in the table
        if message.shown is not None:
            self._screen.call_after_refresh(message.shown.set)
        if not self._screen.drawing:
            return
        if run is self.current and message.fraction is not None:
            self._screen.show_progress(fraction=message.fraction)
        if self.side_by_side:
            self._screen.follow()  # a pane whose events arrive draws at the leader's moment without a key
        self._screen.refresh_views()
        if first and run is self.current and self._autoplay:
            self._screen.autoplay()

    def _load_finished(self, run: Run) -> None:
        run.loading = False
        if run is self.current:
            self.start_followers()  # a source with no events at all
        self.loader.start_chart(run)
        if isinstance(run, LiveRun):
            self.live.ended(run)
        else:
            self.loader.start_audit(run)
        if self.side_by_side and self.teacher.follows(run):
            self.loader.start_warming(run, self.teacher)
        replicas = run.replicas
        if replicas is not None:
            self.loader.start_indexing(run, replicas)
        if run is self.current:
            self._screen.show_progress(done=True)
        self._screen.refresh_views()

    def _load_failed(self, run: Run, message: LoadFailed) -> None:
        run.loading = False
        if run is self.current:
            self.start_followers()
        if len(run.table):  # what the first screen showed was read; something further on could not be
            self._screen.notify(f"{message.reason}\n(its first {count(len(run.table))} events are shown)", title="cannot read the rest",
                                severity="error", timeout=30)
            self._screen.refresh_views()  # the last event is known now: the last one loaded
        else:
            self._screen.notify(message.reason, title="cannot open", severity="error", timeout=30)

    def _chart_ready(self, run: Run, message: ChartReady) -> None:
        if run is self.current and run.table is message.table and self._screen.drawing:
            self._screen.show_chart(message.users, message.edges, message.series, message.engine)
            self._screen.refresh_views()

    def _analysed(self, run: Run, message: Analysed) -> None:
        run.place_violations(message.violations)
        run.checked = message.checked
        run.audit_failure = message.failure
        if message.failure:
            self._screen.notify(message.failure, title="could not check the log's invariants", severity="error", timeout=30)
        if message.violations:
            self._screen.notify(f"{count(len(run.cursor.violations))} event(s) break an invariant: x jumps to the next", severity="warning")

    # A live stream: its connection, its proxy runs, and the log's message until the first event.

    def _stream_said(self, run: LiveRun, message: ConnectionChanged | ProxyRunStarted | BoundChanged | LimitsChanged | LiveAudit) -> None:
        """What only a live stream says besides its events, for its run."""
        match message:
            case ConnectionChanged():
                self._say(self.live.connection_changed(run, run.live, message.status))
                self._screen.refresh_views()
                self.show_waiting(run)
            case ProxyRunStarted():
                toast = self.live.proxy_run_started(run, run.live, message.started, self.current)
                if run is self.current and self._screen.drawing and not self.side_by_side:
                    self.show_table(run)
                self._say(toast)
                self._screen.refresh_views()
                self.show_waiting(run)
            case BoundChanged():
                run.live.bound = message.bound
                self._screen.refresh_views()
            case LimitsChanged():
                run.live.limits, run.slots = message.limits, sum(message.limits.values())
                self._screen.refresh_views()
            case LiveAudit():
                self._say(self.live.audited(run, run.live, message.violations, message.stopped))

    def show_earlier(self) -> None:
        """Show the proxy run before the one shown (from the first, the live one again)."""
        shown = self.live.earlier(self.runs)
        if shown is None:
            self._screen.notify("no earlier proxy run: the proxy has not restarted since attaching", timeout=3)
            return
        self.show_table(shown)
        self._screen.refresh_views()
        self.show_waiting(shown)
