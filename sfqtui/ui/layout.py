"""The dashboard's layout: the status line, a lesson's panel, then either one run's panes
(meters and why above, event log and cost shares below) or the runs side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import ProgressBar

from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import Lesson
from sfqtui.ui.panes.event_log import EventLog, EventLogHeader, header_for
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.log_keys import LOG_MOUSE
from sfqtui.ui.panes.meter_band import MeterBand, MeterHeader
from sfqtui.ui.panes.shares import SharesPanel
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.screens.keys_footer import KeysFooter
from sfqtui.ui.side_by_side.lesson import LessonPanel
from sfqtui.ui.side_by_side.view import SideBySide

W = TypeVar("W", bound=Widget)


def dashboard(runs: Sequence[Run], lesson: Lesson | None) -> ComposeResult:
    yield StatusLine(id="status")
    if lesson is not None:
        yield LessonPanel(lesson, id="lesson")
    if len(runs) > 1:
        yield SideBySide(runs, id="side-by-side")
    else:
        with Horizontal(id="top"):
            with _titled(Vertical(id="band-box"), "meters"):
                yield MeterHeader(id="band-header")
                yield MeterBand(id="band")
            yield _titled(ExplainPanel(id="explain"), "why")
        with Horizontal(id="bottom"):
            with _titled(Vertical(id="log-box"), "event log", LOG_MOUSE):
                header = EventLogHeader(header_for(runs[0].table), id="log-header")
                yield header
                yield EventLog(header, id="log")
            yield _titled(SharesPanel(id="shares"), "cost shares")
    yield ProgressBar(total=1.0, show_eta=False, id="progress")
    yield KeysFooter()


def _titled(widget: W, title: str, subtitle: str = "") -> W:
    widget.border_title = title
    widget.border_subtitle = subtitle
    return widget
