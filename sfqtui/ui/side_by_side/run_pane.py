"""One run in a column, for stepping schedulers side by side.

A pane draws its own run's frame: a head with the scheduler, where its cursor is and
what this step did (the narration), the scheduler's state (the meter band, and for DRR,
FIFO and RR the order in which users will be served), its event log, and its
cumulative shares and waits. The app hands each pane its run's frame; a pane never
looks for data elsewhere.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import SECONDS_DECIMALS, Fixed, amount, count, percent, seconds
from sfqtui.core.replay.config import NOT_RECORDED_CAPACITY, REPRICED
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.event_log import EventLog, EventLogHeader
from sfqtui.ui.panes.meter_band import MeterBand, MeterHeader
from sfqtui.ui.panes.replicas import status_text
from sfqtui.ui.panes.status_line import kind_part, seq_position
from sfqtui.ui.panes.user_picks import top_senders
from sfqtui.ui.widgets.columns import grid
from sfqtui.ui.widgets.fitted_line import FittedLine, part
from sfqtui.ui.widgets.text_view import TextView

SHARE_ROWS = 5


class PaneHead(TextView):
    DEFAULT_CSS = "PaneHead { height: 4; overflow: hidden hidden; }"

    def show(self, frame: Frame, narration: str, differs: bool) -> None:
        """The first line's parts give way whole when the pane is narrow (sfqtui.ui.widgets.fitted_line):
        the last seq first, then the dispatch number, t, v; the replica parts by their ranks."""
        s = frame.state
        split = frame.replicas is not None and frame.replicas.count > 0 and frame.replicas.split  # each replica has its own v
        where = FittedLine([
            *seq_position(frame),
            kind_part(frame, ("dispatch",)),
            part(5, f"  t={seconds(s.t)}s"),
            part(6, f"  v={amount(s.v)}" if frame.has_meters and not split else ""),
            part(4, f"  dispatch #{count(s.dispatched_total)}" if s.dispatched_total else ""),
            *status_text(frame),
        ])
        said = Text(narration, style="bold red" if differs else "green")
        self.set_text([where, said])


class QueueOrder(TextView):
    """Who is served next, for schedulers that serve in an order rather than by a number:
    DRR's active list with the visit in progress, FIFO's line, RR's turns."""

    DEFAULT_CSS = "QueueOrder { height: 2; overflow: hidden hidden; color: $text-muted; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._shown: list[tuple[str, str]] | None = None

    def show(self, frame: Frame, order: list[tuple[str, str]] | None) -> None:
        if order == self._shown and self._parts:  # most steps leave the order as it was
            return
        self._shown = order
        self.display = order is not None
        if order is None:
            return
        line = Text("next: ", style="dim", no_wrap=False)
        for name, note in order:
            line.append(name, "bold")
            line.append(f" ({note})  " if note else "  ")
        if not order:
            line.append("nobody waiting", "dim")
        self.set_text([line])


class PaneShares(TextView):
    DEFAULT_CSS = "PaneShares { height: 8; overflow: hidden hidden; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[EventTable, int] | None = None

    def show(self, frame: Frame) -> None:
        s, table = frame.state, frame.table
        # Charges, counts and waits all change at dispatches only: the same dispatches, the same rows.
        shown = (table, s.dispatched_total)
        if self._shown is not None and self._shown[0] is table and self._shown[1] == s.dispatched_total:
            return
        self._shown = shown
        total = s.charged_total or 1.0
        top, sent = top_senders(table, s, SHARE_ROWS)
        means = []
        for u in top:
            served, waited = table.waits_until(u, frame.k)
            means.append(waited / served if served else None)
        wait = Fixed.of(means, least=SECONDS_DECIMALS)
        rows = [((table.users[u][:14], percent(s.charged[u] / total), count(s.dispatched[u]), wait(mean)), "") for u, mean in zip(top, means)]
        if sent > SHARE_ROWS:
            rows.append(((f"… {count(sent - SHARE_ROWS)} more", "", "", ""), "dim"))
        self.set_text(grid(("user", "share", "sent", "mean wait s"), rows, (False, True, True, True)))


class RunPane(Vertical):
    DEFAULT_CSS = """
    RunPane { width: 1fr; border: round $primary 50%; border-title-color: $text; }
    RunPane MeterBand { height: 1fr; }
    RunPane EventLog { height: 1fr; }
    """

    def __init__(self, run_key: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run_key = run_key
        self._shown: tuple[Hashable, ...] | None = None  # what the pane was last drawn from

    def _drawn_from(self, frame: Frame, narration: str, differs: bool, order: list[tuple[str, str]] | None) -> tuple[Hashable, ...]:
        """All that the pane's views read from a step, and their sizes: equal, the pane would draw what it shows."""
        table = frame.table
        return (table, len(table), frame.loading, frame.k, frame.options, frame.replicas, narration, differs,
                None if order is None else tuple(order), self.events.search_text,
                *(view.size for view in (self.head, self.band, self.serving, self.events, self.shares)))

    def compose(self) -> ComposeResult:
        # Kept as attributes: a step draws every pane, and queries would walk the DOM each time.
        self.head, self.band_header, self.band = PaneHead(), MeterHeader(), MeterBand()
        self.serving, self.events_header, self.shares = QueueOrder(), EventLogHeader(), PaneShares()
        self.events = EventLog(self.events_header)
        yield from (self.head, self.band_header, self.band, self.serving, self.events_header, self.events, self.shares)

    def show(self, frame: Frame, narration: str, differs: bool, order: list[tuple[str, str]] | None) -> None:
        # Side by side, a step often leaves a pane where it was (its run has no event at the
        # leader's new moment): then none of its views would change.
        drawn_from = self._drawn_from(frame, narration, differs, order) if frame.connection is None else None
        if drawn_from is not None and drawn_from == self._shown:
            return
        self._shown = drawn_from
        traits = frame.table.traits
        title = f"{frame.table.scheduler}: {traits.title}" if traits is not None else frame.table.scheduler
        if frame.replicas is not None and frame.replicas.settings is not None and frame.replicas.settings.replicated:
            title += f", {frame.replicas.settings.describe()}"
        if frame.repriced:
            title += f", {REPRICED}"
        if frame.capacity_ignored:
            title += f", {NOT_RECORDED_CAPACITY}"
        if title != self.border_title:  # setting it repaints the whole pane, even to the same text
            self.border_title = title
        self.head.show(frame, narration, differs)
        self.band.show(frame)
        self.band_header.show(frame, self.band.band_layout)
        self.serving.show(frame, order)
        self.events.show(frame, differs)
        self.shares.show(frame)
