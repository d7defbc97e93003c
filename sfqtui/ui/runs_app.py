"""The dashboard's runs and their loading: workers that only post messages, and the handlers that take them in.

``SfqApp`` (app.py) adds the views and the keys; this part owns ``runs`` (the first is
the one the keys move) and keeps each one's table, timeline and audit up to date as its
source delivers. Every worker runs with ``exit_on_error=False``: one that fails is
reported by ``on_worker_state_changed`` (what failed, for which run) and the app goes on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from textual import work
from textual.app import App
from textual.screen import Screen
from textual.widgets import ProgressBar
from textual.worker import Worker, WorkerState, get_current_worker

from sfqtui.core.engine.gcpause import keep_out_of_collections
from sfqtui.core.log.cursor import Cursor
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import CheckpointBuilder, Timeline
from sfqtui.core.numbers import count
from sfqtui.core.schedulers import REGISTRY
from sfqtui.live.bound import bound_of
from sfqtui.live.source import Notice
from sfqtui.live.stream import LIVE, RECONNECTING, REFUSED, STOPPED
from sfqtui.runs.audit_job import violations
from sfqtui.runs.live import LiveOpening, seed_from_proxy, snapshot_window
from sfqtui.runs.opening import Opening
from sfqtui.runs.protocols import RunOpening, RunSource
from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import Lesson
from sfqtui.trace.load import load_trace
from sfqtui.ui.connection import Link, WaitingForEvents, clock, waiting_message
from sfqtui.ui.event_log import EventLog
from sfqtui.ui.lesson import LessonPanel
from sfqtui.ui.loading import (
    Analysed,
    BoundChanged,
    ChartReady,
    ConnectionChanged,
    EventsLoaded,
    LiveAudit,
    LoadFailed,
    LoadFinished,
    Opened,
    OutcomeMeasured,
    ProxyRunStarted,
    RunMessage,
    WindowStarted,
)
from sfqtui.ui.shares import SharesPanel, shares_chart

CHART_EVERY_S = 2.0  # while a log grows, the shares chart is binned again this often


class RunsApp(App[str]):
    def __init__(self, openings: Sequence[RunOpening], autoplay: bool = False) -> None:
        super().__init__()
        self.runs: list[Run] = [Run(o, title=o.title) for o in openings]
        for run in self.runs:
            if isinstance(run.opening, LiveOpening):
                run.loaded = None  # a live stream never ends: there is no fraction loaded
        self.ended_runs: list[Run] = []  # a live stream's earlier proxy runs, oldest first, kept browsable
        self._offstage: list[Run] = []  # the live run while an earlier proxy run is shown in its place
        self._sources: dict[int, RunSource] = {}  # each loading run's source, by run key, to close at quit
        self._autoplay = autoplay
        self._work_for: dict[Worker[None], int] = {}  # running workers, by the key of the run they work for

    def refresh_views(self) -> None:
        """Draw what the runs hold now (the dashboard's views)."""
        raise NotImplementedError

    def action_toggle_play(self) -> None:
        raise NotImplementedError

    def _follow(self) -> None:
        """Put the other runs at the leading run's moment (the dashboard's lockstep)."""
        raise NotImplementedError

    def run_loaded(self, run: Run) -> None:
        """Called once a run's log is whole: for work that needs all of it."""

    @property
    def current(self) -> Run:
        """The run the views show and the keys move (the others follow it in lockstep)."""
        return self.runs[0]

    @property
    def opening(self) -> RunOpening:
        return self.current.opening

    @property
    def table(self) -> EventTable:
        return self.current.table

    @property
    def timeline(self) -> Timeline:
        return self.current.timeline

    @property
    def cursor(self) -> Cursor:
        return self.current.cursor

    @property
    def loading(self) -> bool:
        """True until every run's log is loaded (or loading failed)."""
        return any(run.loading for run in self.runs)

    @property
    def checked(self) -> bool:
        """True once the current run's log has been audited for invariant violations."""
        return self.current.checked

    def _run(self, message: RunMessage) -> Run | None:
        """The run a message is about, if it is still open (a re-run replaces its key)."""
        return next((run for run in (*self.runs, *self._offstage) if run.key == message.run), None)

    def _is_open(self, run: Run) -> bool:
        return run in self.runs or run in self._offstage

    @property
    def main(self) -> Screen:
        """The dashboard's own screen, also while a question or the help is shown over it."""
        return self.screen_stack[0]

    @property
    def side_by_side(self) -> bool:
        return len(self.runs) > 1

    def _start_loading(self, run: Run) -> None:
        run.started = True
        if run is self.current:
            self.main.query_one("#progress", ProgressBar).remove_class("-done")
        self.works_for(run, self._load(run))

    def works_for(self, run: Run, worker: Worker[None]) -> None:
        """Note the run a worker works for, so that its failure can say which and stop the waiting."""
        self._work_for[worker] = run.key

    @work(thread=True, group="load", exit_on_error=False, description="loading")
    def _load(self, run: Run) -> None:
        worker = get_current_worker()
        try:
            source = run.opening.source()
            self._sources[run.key] = source
            self.post_message(Opened(run.key, source.title, source.scheduler, source.metadata))
            builder = CheckpointBuilder()
            if run.opening.is_log and (window := snapshot_window(source.metadata, builder)) is not None:
                self.post_message(WindowStarted(run.key, *window))
            try:
                for item, fraction in source.batches():
                    if worker.is_cancelled or not self._is_open(run):
                        return
                    if isinstance(item, Notice):
                        builder = self._notice(run, builder, item)
                        continue
                    checkpoints = builder.consume(item)
                    self.post_message(EventsLoaded(run.key, item, checkpoints, builder.every, fraction))
            finally:
                self._sources.pop(run.key, None)
                close = getattr(source, "close", None)
                if close is not None:
                    close()
        except ValueError as exc:  # an InputError, or a page past the checked ones that Arrow cannot read
            self.post_message(LoadFailed(run.key, str(exc)))
            return
        self.post_message(LoadFinished(run.key))

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick_countdown)

    def on_unmount(self) -> None:
        """Quitting: stop every source that may be waiting on the network, so that its
        loading thread ends now (the process waits for it) instead of at its next event."""
        for source in list(self._sources.values()):
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def _notice(self, run: Run, builder: CheckpointBuilder, notice: Notice) -> CheckpointBuilder:
        """On the loading thread: what a source that never ends says besides its events;
        returns the checkpoint builder for the events that follow (a new proxy run starts afresh)."""
        if notice.connection is not None:
            self.post_message(ConnectionChanged(run.key, notice.connection))
        if notice.record_problem is not None:
            self.notify(notice.record_problem, title="recording", severity="error", timeout=30)
        if notice.run is not None:
            self.post_message(ProxyRunStarted(run.key, notice.run))
            builder = CheckpointBuilder()
        if notice.bound is not None:
            self.post_message(BoundChanged(run.key, notice.bound))
        if notice.violations is not None or notice.audit_stopped is not None:
            self.post_message(LiveAudit(run.key, notice.violations or [], notice.audit_stopped))
        if notice.window is not None:
            weights = {u["user"]: float(u.get("weight") or 1.0) for u in (notice.state or {}).get("users", [])}
            added = [weights.get(name, 1.0) for name in notice.new_users]
            builder.add_users(added)
            seed = builder.new_window(seed_from_proxy(notice.state, notice.users) if notice.state else None)
            self.post_message(WindowStarted(run.key, notice.window, seed, notice.new_users, added))
        return builder

    def _chart(self, run: Run) -> None:
        """Bin the shares chart over the log loaded so far (it may still be growing)."""
        self.works_for(run, self._bin_chart(run, run.table, len(run.table)))  # the bound: taken on the thread that appends

    @work(thread=True, group="chart", exit_on_error=False, description="binning the shares chart")
    def _bin_chart(self, run: Run, table: EventTable, events: int) -> None:
        self.post_message(ChartReady(run.key, table, *shares_chart(table, events)))

    def _chart_growing_runs(self) -> None:
        for run in self.runs:
            if run.loading and len(run.table):
                self._chart(run)

    @work(thread=True, group="audit", exit_on_error=False, description="checking the invariants")
    def _audit(self, run: Run) -> None:
        """Once the log is complete: the audit of its invariants, if its scheduler has any."""
        worker = get_current_worker()
        traits = REGISTRY.get(run.scheduler)
        if traits is None or traits.audit is None or not isinstance(run.opening, Opening):  # a live stream is audited as it comes
            self.post_message(Analysed(run.key, [], checked=False))
            return
        try:
            found = violations(run.opening, len(run.table), cancelled=lambda: worker.is_cancelled or not self._is_open(run))
        except (RuntimeError, ValueError) as exc:  # an InputError is a ValueError
            self.post_message(Analysed(run.key, [], checked=False, failure=str(exc)))
            return
        if found is not None:
            self.post_message(Analysed(run.key, found, checked=True))

    @work(thread=True, group="lesson", exit_on_error=False, description="measuring the lesson's outcome")
    def _measure_outcome(self, lesson: Lesson, trace: Path) -> None:
        self.post_message(OutcomeMeasured(lesson.outcome(load_trace(trace).trace)))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where background work that failed is reported: a notification says
        what failed and for which run, that run stops waiting for it, and the app goes on."""
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        key = self._work_for.pop(event.worker, None)
        if event.state == WorkerState.ERROR and self.screen_stack:
            self.worker_failed(event.worker, next((run for run in self.runs if run.key == key), None))

    def worker_failed(self, worker: Worker[object], run: Run | None) -> None:
        error = worker.error
        what = f"{worker.description or worker.name}{f' {run.title}' if run is not None else ''}"
        said = f"{what} failed: {type(error).__name__}: {error}"
        self.notify(f"{said}\n(a bug in sfqtui: the rest goes on)", title="background work failed", severity="error", timeout=30)
        if run is None:
            return
        if worker.group == "load":
            run.loading = False
            if run is self.current:
                self._start_followers()
                self.main.query_one("#progress", ProgressBar).add_class("-done")
        elif worker.group == "audit":
            run.checked, run.audit_failure = False, said
        self.refresh_views()

    def on_outcome_measured(self, message: OutcomeMeasured) -> None:
        self.main.query_one(LessonPanel).outcome = message.lines
        self.refresh_views()

    def on_chart_ready(self, message: ChartReady) -> None:
        run = self._run(message)
        if run is self.current and run.table is message.table and self.screen_stack:
            for panel in self.main.query(SharesPanel):
                panel.set_chart(message.users, message.edges, message.series)
            self.refresh_views()

    def on_opened(self, message: Opened) -> None:
        run = self._run(message)
        if run is None:
            return
        run.reset(message.scheduler)
        run.title, run.metadata, run.slots = message.title, message.metadata, message.metadata.get("slots")
        if run is self.current:
            self.sub_title = message.title
        if not self.side_by_side and run is self.current:
            self.main.query_one(EventLog).use(run.table)

    # A live stream: its connection, its proxy runs, and the log's message until the first event.

    def on_connection_changed(self, message: ConnectionChanged) -> None:
        run = self._run(message)
        if run is None:
            return
        status, before = message.status, run.link
        run.connection, run.link = status.state, status
        if status.state == LIVE and run.audit_failure is None:
            run.checked = True  # audited as it arrives
        if before is not None and before.url != status.url and run.bound is not None:
            run.bound = None  # another replica of the group: its bound is its own, and it says it only when it changes
        if before is None or before.state != status.state or before.url != status.url:
            if status.state == LIVE and before is not None and before.state in (RECONNECTING, STOPPED) and before.url != status.url:
                self.notify(f"following {status.url} ({before.url}: {before.detail})", title="stream moved", timeout=8)
            elif status.state == RECONNECTING:
                self.notify(f"connection lost ({status.detail}): retrying", title="stream", severity="warning", timeout=8)
            elif status.state in (STOPPED, REFUSED):
                self.notify(status.detail, title="stream", severity="warning" if status.state == STOPPED else "error", timeout=8)
        self.refresh_views()
        self._show_waiting(run)

    def link_of(self, run: Run) -> Link | None:
        """What the status line says of a live run's connection (None for a replay)."""
        live = self.live_run()
        if live is None or live.link is None:
            return None
        since = live.new_run_since
        if run is live:
            return Link(live.link, since)
        if run in self.ended_runs:
            n = self.ended_runs.index(run) + 1
            ended = f", ended by {clock(run.ended_at)}" if run.ended_at else ""
            return Link(live.link, since, f"proxy run {n} of {len(self.ended_runs) + 1}{ended}")
        return None

    def live_run(self) -> Run | None:
        """The run of a live stream, shown or not (None in a replay)."""
        return next((run for run in (*self.runs, *self._offstage) if isinstance(run.opening, LiveOpening) and run not in self.ended_runs), None)

    def _tick_countdown(self) -> None:
        """While a live stream is not live, or has no event yet, its state is drawn again every
        second: the countdown to the next attempt moves (and nothing else would redraw it)."""
        live = self.live_run()
        if live is not None and live.link is not None and (live.link.state != LIVE or not len(live.table)):
            self.refresh_views()
            self._show_waiting(live)

    def _show_waiting(self, run: Run) -> None:
        """The log's message while the live run shown has no event (none came yet, or a new proxy run has none yet)."""
        if not self.screen_stack or self.side_by_side or run is not self.current:
            return
        waiting = self.main.query(WaitingForEvents)
        if len(run.table) or run.link is None:
            waiting.remove()
            return
        text = waiting_message(Link(run.link), time.monotonic())
        if waiting:
            waiting.first().update(text)
        else:
            log = self.main.query_one(EventLog)
            log.parent.mount(WaitingForEvents(text), before=log)  # type: ignore[union-attr]  # the log is always in its box

    def on_proxy_run_started(self, message: ProxyRunStarted) -> None:
        """A proxy run begins: after a restart, what the live run held is kept browsable
        (``e``) and the live run starts again from an empty state at seq 0."""
        run = self._run(message)
        if run is None:
            return
        started = message.started
        state = started.state or {}
        if started.restarted:
            run.new_run_since = started.started or time.time()
            if len(run.table):
                self._keep_ended(run, ended_by=run.new_run_since)
        run.reset(state.get("scheduler") or run.scheduler)
        run.proxy_run = started
        run.bound = bound_of(state, found=True)
        run.slots = state.get("slots") or run.slots
        run.following, run.checked, run.audit_failure, run.live_violations = True, True, None, []  # audited as it arrives
        run.broken = {}
        if run is self.current and self.screen_stack and not self.side_by_side:
            self._show_table(run)
        if started.restarted:
            self.notify(f"the proxy at {started.url} restarted: a new run (its seqs start again from 0)"
                        + (f"; e shows the earlier one{'s' if len(self.ended_runs) > 1 else ''}" if self.ended_runs else ""),
                        title="new proxy run", timeout=10)
        self.refresh_views()
        self._show_waiting(run)

    def _show_table(self, run: Run) -> None:
        """The views list another table (a new proxy run's, or an earlier one's): the chart of the one before goes."""
        self.main.query_one(EventLog).use(run.table)
        self.main.query_one(SharesPanel).set_chart([], [], {})
        if len(run.table):
            self._chart(run)

    def _keep_ended(self, run: Run, ended_by: float) -> None:
        """Keep the live run's events as an ended proxy run (over by ``ended_by``, the next one's start), within the live window's memory."""
        ended = Run(run.opening, scheduler=run.scheduler, title=run.title, slots=run.slots, metadata=run.metadata, loaded=1.0,
                    loading=False, started=True, following=False, live_violations=run.live_violations, broken=run.broken, checked=run.checked,
                    audit_failure=run.audit_failure, proxy_run=run.proxy_run, ended_at=ended_by)
        ended.table, ended.timeline, ended.cursor = run.table, run.timeline, run.cursor
        self.ended_runs.append(ended)
        window = getattr(run.opening, "window", len(run.table))
        while len(self.ended_runs) > 1 and sum(len(r.table) for r in self.ended_runs) > window and self.ended_runs[0] is not self.current:
            self.ended_runs.pop(0)

    def action_earlier_proxy_run(self) -> None:
        """Show the proxy run before the one shown (from the first, the live one again)."""
        live = self.live_run()
        if live is None:  # SfqApp.check_action keeps the key to live streams
            return
        if not self.ended_runs:
            self.notify("no earlier proxy run: the proxy has not restarted since attaching", timeout=3)
            return
        order = [*self.ended_runs, live]
        shown = order[order.index(self.current) - 1]
        self.runs[0] = shown
        self._offstage = [] if shown is live else [live]
        self._show_table(shown)
        self.refresh_views()
        self._show_waiting(shown)

    def on_bound_changed(self, message: BoundChanged) -> None:
        run = self._run(message)
        if run is not None:
            run.bound = message.bound
            self.refresh_views()

    def on_live_audit(self, message: LiveAudit) -> None:
        """A live stream is audited as it arrives: violations so far (by seq), or why the audit stopped."""
        run = self._run(message)
        if run is None:
            return
        if message.stopped:
            run.checked, run.audit_failure = False, message.stopped
            return
        run.live_violations = message.violations
        run.checked = True
        run.place_violations(run.live_violations, before=len(run.table) + 100_000)
        self.notify(f"{count(len(run.cursor.violations))} event(s) of the stream break an invariant: x jumps to the next", severity="warning")

    def on_window_started(self, message: WindowStarted) -> None:
        run = self._run(message)
        if run is not None:
            run.new_window(message.first_seq, message.seed, message.new_users, message.weights)
            run.place_violations(run.live_violations, before=len(run.table) + 100_000)

    def on_events_loaded(self, message: EventsLoaded) -> None:
        run = self._run(message)
        if run is None:
            return
        first = len(run.table) == 0
        run.append(message.batch, message.checkpoints, message.every, message.fraction)
        if first and run is self.current:
            self._start_followers()
            self._show_waiting(run)
        if message.fraction is None and run.following:
            run.cursor.end()
        keep_out_of_collections()  # long-lived objects now sit in the table
        if not self.screen_stack:
            return
        if run is self.current and message.fraction is not None:
            self.main.query_one("#progress", ProgressBar).update(progress=message.fraction)
        if self.side_by_side:
            self._follow()  # a pane whose events arrive draws at the leader's moment without a key
        self.refresh_views()
        if first and run is self.current and self._autoplay:
            self.action_toggle_play()

    def on_load_finished(self, message: LoadFinished) -> None:
        run = self._run(message)
        if run is None:
            return
        run.loading = False
        if run is self.current:
            self._start_followers()  # a source with no events at all
        self._chart(run)
        self._audit(run)
        self.run_loaded(run)
        if run is self.current:
            self.main.query_one("#progress", ProgressBar).add_class("-done")
        self.refresh_views()

    def _start_followers(self) -> None:
        for run in self.runs[1:]:
            if run.loading and not run.started:
                self._start_loading(run)

    def on_load_failed(self, message: LoadFailed) -> None:
        run = self._run(message)
        if run is not None:
            run.loading = False
            if run is self.current:
                self._start_followers()
            self.notify(message.reason, title="cannot open", severity="error", timeout=30)

    def on_analysed(self, message: Analysed) -> None:
        run = self._run(message)
        if run is None:
            return
        run.place_violations(message.violations)
        run.checked = message.checked
        run.audit_failure = message.failure
        if message.failure:
            self.notify(message.failure, title="could not check the log's invariants", severity="error", timeout=30)
        if message.violations:
            self.notify(f"{count(len(run.cursor.violations))} event(s) break an invariant: x jumps to the next", severity="warning")
