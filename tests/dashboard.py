"""Helpers for driving the dashboard in tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual._context import active_app
from textual.app import App, ComposeResult
from textual.command import Command, CommandInput, CommandList, CommandPalette
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.notifications import Notification
from textual.pilot import Pilot
from textual.widget import Widget

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.schedulers import REGISTRY
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import SfqApp
from sfqtui.ui.frame import Frame
from sfqtui.ui.loading.run_loader import RunLoader
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.meter_band import MeterBand, MeterHeader

TRACES = Path(__file__).resolve().parents[1] / "traces"
SIZE = (120, 34)
LIVE_SIZE = (140, 40)  # attach: wide enough for the status line of a live stream


def dashboard(trace: str | Path = "seed-example.parquet", scheduler: str = "sfq", is_log: bool = False) -> SfqApp:
    path = trace if isinstance(trace, Path) else TRACES / trace
    return SfqApp(Opening(path, is_log=is_log, config=ReplayConfig(scheduler)))


def lesson_dashboard(folder: Path, name: str = "worked-example") -> SfqApp:
    """The dashboard of a lesson, as `sfqtui teach NAME` opens it (its trace written to ``folder``)."""
    lesson = LESSONS[name]
    trace = folder / f"{name}.parquet"
    lesson.write(trace)
    openings = [Opening(trace, is_log=False, config=lesson.config(s), slots_given=True) for s in lesson.schedulers]
    return SfqApp(openings, lockstep=lesson.lockstep, lesson=lesson)


def without_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs' invariant audit never starts (``settle(pilot, analysed=False)`` then): for a test
    whose claim is not about the audit, on a log where the audit (a second replay of a trace and a
    check of every event) costs more than the rest of the test. tests/runs/test_audit_job.py and
    the tests that press x keep it."""
    monkeypatch.setattr(RunLoader, "start_audit", lambda _loader, _run: None)


QUIET_MAX_S = 1.0  # as long as Textual's own wait_for_idle waits at most
QUIET_SPINS = 20  # rounds of the event loop looked at back to back; then every QUIET_POLL_S (a handler awaiting a clock)
QUIET_POLL_S = 0.002


def _quiet(app: App) -> bool:
    """Whether the app has handled everything posted so far: no resize is waiting on its short
    timer, no node of the app or of its screens (the dashboard under a question too) has a
    message waiting or a call due, and the screen shown has no layout, repaint or callback pending."""
    if app._resize_timer is not None:  # a new terminal size is taken 1/120 s after it is told
        return False
    nodes = [app, *(node for stacked in app.screen_stack for node in stacked.walk_children(with_self=True))]
    if any(not node._message_queue.empty() or node._next_callbacks for node in nodes):
        return False
    screen = app.screen
    if screen._layout_required or screen._scroll_required or screen._repaint_required or screen._recompose_required or screen._dirty_widgets \
            or screen._callbacks:
        screen._on_timer_update()  # as Pilot.pause() does at its end: the redraw now, not at the next tick of its timer
        return False
    return True


async def until_quiet(_min_sleep: float = 0.0, max_sleep: float = QUIET_MAX_S) -> None:
    """Textual's Pilot, after each key and in ``pause()``, waits until the process has used
    little processor time for 20 ms (``textual._wait.wait_for_idle``): at least 40 ms a key,
    more while any thread of the test process works. This one (tests/conftest.py puts it in
    its place) lets the app run until it has handled the key: until ``_quiet``."""
    try:
        app = active_app.get()
    except LookupError:
        return
    deadline, spins = time.monotonic() + max_sleep, 0
    while time.monotonic() < deadline:
        await asyncio.sleep(0 if spins < QUIET_SPINS else QUIET_POLL_S)
        spins += 1
        if not app.is_running or not app.screen_stack or _quiet(app):
            return


SETTLE_S = 30.0  # generous: the machine may be busy; a dashboard that gets there sooner costs nothing


async def until(pilot: Pilot, condition: Callable[[], object], what: str, timeout: float = SETTLE_S) -> None:
    """Wait until ``condition()`` holds; fail the test, naming ``what``, if it does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await pilot.pause(0.02)


async def settle(pilot: Pilot, analysed: bool = True) -> None:
    """Wait until the log is loaded (and audited), then let the screen catch up; fails the test if it never is."""
    app = pilot.app
    assert isinstance(app, SfqApp)
    await until(pilot, lambda: not app.loading and (app.checked or not analysed or REGISTRY[app.table.scheduler].audit is None),
                "the dashboard to load" + (" and audit its log" if analysed else ""))
    await pilot.pause()


async def run_command(pilot: Pilot, title: str) -> None:
    """Open the palette (ctrl+p), put ``title`` in its input and press enter once the palette lists
    that command first. The title goes in at once, as pasted: typed, each letter would search again."""
    await pilot.press("ctrl+p")
    await until(pilot, lambda: isinstance(pilot.app.screen, CommandPalette), "the palette to open")
    pilot.app.screen.query_one(CommandInput).value = title

    def listed_first() -> bool:
        lists = pilot.app.screen.query(CommandList)
        if not lists or not lists.first().option_count:
            return False
        first = lists.first().get_option_at_index(0)
        return isinstance(first, Command) and getattr(first.hit, "text", None) == title

    await until(pilot, listed_first, f"the palette to list {title!r}")
    await pilot.press("enter")


KEPT = "kept_notifications"  # where tests/conftest.py keeps an app's notifications


def notifications(app: App) -> list[Notification]:
    """Every notification the app has shown so far, its toast expired or not."""
    kept: list[Notification] = app.__dict__.get(KEPT, [])
    return kept


def text_of(widget: Widget) -> str:
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)


def screen_text(app: App) -> str:
    return app.export_screenshot()


def seen(app: SfqApp) -> int:
    """The seq of the newest event the app holds."""
    return app.table.first_seq + len(app.table) - 1


class Panes(App[None]):
    """The band, its header and the why panel, as the dashboard lays them out, without a loaded app:
    a test of what they draw shows them a frame it builds (``frame_of``)."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical():
                yield MeterHeader()
                yield MeterBand()
            yield ExplainPanel()


def frame_of(run: Run) -> Frame:
    """The frame the dashboard draws for a whole loaded ``run`` at its cursor, paused."""
    return Frame(run.table, run.state(), run.cursor.k, run.title, run.slots, run.loaded, False, False, 10.0, replicas=run.replicas)
