"""A live stream's runs: its connection, the proxy runs seen (an earlier one kept browsable
after a restart), and its audit as it arrives (a new window is the run's own: LiveRun.new_window).

No widgets: each step changes the runs and says what to tell the user (a ``Toast``), and
the app shows it; so the follower is tested without an app.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from sfqtui.attach.bound import bound_of
from sfqtui.attach.stream import LIVE, RECONNECTING, REFUSED, STOPPED, RunStarted, Status
from sfqtui.core.analysis.audit import Violation
from sfqtui.core.numbers import count
from sfqtui.core.schedulers import REGISTRY
from sfqtui.runs.run import LATE_VIOLATIONS, LiveRun, Run
from sfqtui.runs.stream_opening import LiveState
from sfqtui.ui.stream.connection import Link, clock, waiting_message


@dataclass(frozen=True)
class Toast:
    """What a step tells the user (a notification)."""

    message: str
    title: str = ""
    severity: Literal["information", "warning", "error"] = "information"
    timeout: float | None = 8  # None: the app's default


class LiveFollower:
    """The live run of the runs shown (None in a replay) and its ended proxy runs."""

    def __init__(self) -> None:
        self.ended_runs: list[LiveRun] = []  # the live stream's earlier proxy runs, oldest first, kept browsable
        self.offstage: list[LiveRun] = []  # the live run while an earlier proxy run is shown in its place

    def live_run(self, runs: list[Run]) -> LiveRun | None:
        """The run of a live stream, shown or not (None in a replay)."""
        return next((run for run in (*runs, *self.offstage) if isinstance(run, LiveRun) and run not in self.ended_runs), None)

    def link_of(self, run: Run, runs: list[Run]) -> Link | None:
        """What the status line says of a live run's connection (None for a replay)."""
        live_run = self.live_run(runs)
        link = live_run.live.link if live_run is not None else None
        if live_run is None or link is None:
            return None
        since = live_run.live.new_run_since
        if run is live_run:
            return Link(link, since)
        for n, ended_run in enumerate(self.ended_runs, 1):
            if ended_run is run:
                ended_at = ended_run.live.ended_at
                ended = f", ended by {clock(ended_at)}" if ended_at else ""
                return Link(link, since, f"proxy run {n} of {len(self.ended_runs) + 1}{ended}")
        return None

    @staticmethod
    def waiting(run: Run) -> str | None:
        """The log's message while a live run has no event (none came yet, or a new proxy run has none yet)."""
        if len(run.table) or not isinstance(run, LiveRun) or run.live.link is None:
            return None
        return waiting_message(Link(run.live.link), time.monotonic())

    def counting_down(self, runs: list[Run]) -> LiveRun | None:
        """The live run while it is not live, or has no event yet: its state is drawn again
        every second, so the countdown to the next attempt moves."""
        run = self.live_run(runs)
        link = run.live.link if run is not None else None
        return run if link is not None and run is not None and (link.state != LIVE or not len(run.table)) else None

    @staticmethod
    def connection_changed(run: Run, live: LiveState, status: Status) -> Toast | None:
        before, live.link = live.link, status
        if status.state == LIVE and run.audit_failure is None:
            run.checked = True  # audited as it arrives
        if before is not None and before.url != status.url:
            live.bound = None  # another replica of the group: its bound is its own, and it says it only when it changes
        if before is not None and before.state == status.state and before.url == status.url:
            return None
        if status.state == LIVE and before is not None and before.state in (RECONNECTING, STOPPED) and before.url != status.url:
            return Toast(f"following {status.url} ({before.url}: {before.detail})", "stream moved")
        if status.state == RECONNECTING:
            return Toast(f"connection lost ({status.detail}): retrying", "stream", "warning")
        if status.state in (STOPPED, REFUSED):
            return Toast(status.detail, "stream", "warning" if status.state == STOPPED else "error")
        return None

    def proxy_run_started(self, run: Run, live: LiveState, started: RunStarted, shown: Run) -> Toast | None:
        """A proxy run begins: after a restart, what the live run held is kept browsable
        (``e``) and the live run starts again from an empty state at seq 0."""
        state = started.state  # None: it could not be read
        if started.restarted:
            live.new_run_since = started.started or time.time()
            if len(run.table):
                self._keep_ended(run, live, shown, ended_by=live.new_run_since)
        run.reset((state.get("scheduler") if state else None) or run.scheduler)
        live.proxy_run = started
        live.bound = bound_of(state, found=True)
        run.slots = (state.get("slots") if state else None) or run.slots
        live.following, live.violations = True, []
        run.checked, run.audit_failure, run.broken = True, None, {}  # audited as it arrives
        if not started.restarted:
            return None
        earlier = f"; e shows the earlier one{'s' if len(self.ended_runs) > 1 else ''}" if self.ended_runs else ""
        return Toast(f"the proxy at {started.url} restarted: a new run (its seqs start again from 0){earlier}", "new proxy run", timeout=10)

    def _keep_ended(self, run: Run, live: LiveState, shown: Run, ended_by: float) -> None:
        """Keep the live run's events as an ended proxy run (over by ``ended_by``, the next one's start), within the live window's memory."""
        ended = LiveRun(run.opening, scheduler=run.scheduler, title=run.title, slots=run.slots, metadata=run.metadata, loaded=1.0,
                    loading=False, started=True, broken=run.broken, checked=run.checked, audit_failure=run.audit_failure,
                    live=LiveState(proxy_run=live.proxy_run, ended_at=ended_by, following=False, violations=live.violations))
        ended.table, ended.timeline, ended.cursor = run.table, run.timeline, run.cursor
        self.ended_runs.append(ended)
        window = getattr(run.opening, "window", len(run.table))
        while len(self.ended_runs) > 1 and sum(len(r.table) for r in self.ended_runs) > window and self.ended_runs[0] is not shown:
            self.ended_runs.pop(0)

    def earlier(self, runs: list[Run]) -> Run | None:
        """Put the proxy run before the one shown in its place (from the first, the live one
        again) and return it; None when the proxy has not restarted."""
        live = self.live_run(runs)
        if live is None or not self.ended_runs:
            return None
        order: list[Run] = [*self.ended_runs, live]
        shown = order[order.index(runs[0]) - 1]
        runs[0] = shown
        self.offstage = [] if shown is live else [live]
        return shown

    @staticmethod
    def ended(run: LiveRun) -> None:
        """The stream ended: its audit is the one it reported as it came (its violations stay
        marked, or why it stopped); there is no whole log to audit again."""
        traits = REGISTRY.get(run.scheduler)
        if traits is None or traits.audit is None:
            run.checked = False  # `x` says there are no invariants to check for this scheduler

    @staticmethod
    def audited(run: Run, live: LiveState, violations: list[Violation], stopped: str | None) -> Toast | None:
        """The stream's audit so far: violations (by seq), or why the audit stopped."""
        if stopped:
            run.checked, run.audit_failure = False, stopped
            return None
        live.violations = violations
        run.checked = True
        run.place_violations(violations, before=len(run.table) + LATE_VIOLATIONS)
        return Toast(f"{count(len(run.cursor.violations))} event(s) of the stream break an invariant: x jumps to the next",
                     severity="warning", timeout=None)
