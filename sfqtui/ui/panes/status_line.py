"""One line: scheduler (and, for a run of replicas, the one shown: k cycles), time, v, c_max, the seq of the current
event (and the last seq) and its kind, slots, play state, for a live stream its connection (sfqtui.ui.stream.connection),
and, while a group's bound is suspended, since when and why. A replay repriced by the estimator (a what-if, not the
trace's recorded charges), or of a recording under --slots auto on other slots (not the recorded capacity), says so
after the scheduler's name."""

from __future__ import annotations

import time

from rich.text import Text

from sfqtui.core.numbers import amount, count, percent, seconds
from sfqtui.core.replay.config import NOT_RECORDED_CAPACITY, REPRICED
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.replicas import status_text
from sfqtui.ui.stream.connection import bound_part, connection_part
from sfqtui.ui.widgets.fitted_line import FittedLine, Part, always, part
from sfqtui.ui.widgets.text_view import TextView

LAST_RANK = 3  # the rank of "(last N)" (sfqtui.ui.widgets.fitted_line): the seq of the last event gives way early


def seq_position(frame: Frame) -> list[Part]:
    """Where the cursor is, as the log's seq column numbers events: ``seq 397 (last 397)``;
    while a source that ends is still loading, its last event is not known yet, and the
    line says so rather than give the last one loaded."""
    table, k = frame.table, frame.k
    last = len(table) - 1
    at = count(table.first_seq + k) if k >= 0 else "-"
    if last < 0:
        tail = " (no events yet)"
    elif frame.loading and frame.loaded is not None:
        tail = " (last: counting…)"
    else:
        tail = f" (last {count(table.first_seq + last)})"
    return [always(Text.assemble("seq ", (at, "bold"))), part(LAST_RANK, tail)]


def kind_part(frame: Frame, marked: tuple[str, ...]) -> Part:
    """The kind of the cursor's event, shown reversed if it is one of ``marked``."""
    kind = frame.table.kind_name(frame.k) if frame.k >= 0 else "start"
    return always(Text.assemble(" ", (kind, "bold reverse" if kind in marked else "bold")))


class StatusLine(TextView):
    """Parts that do not fit the width give way whole, the least needed first: the play
    speed, each replica's v and c_max, the last seq, t, v, the play state, the counts."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; overflow: hidden hidden; }
    """

    def show(self, frame: Frame) -> None:
        s, table = frame.state, frame.table
        own_v = frame.replicas is None or not frame.replicas.count or not frame.replicas.split
        one = frame.replicas is not None and frame.options.replica is not None and frame.options.replica < frame.replicas.count
        slots = count(frame.slots) if frame.slots else "?"
        parts = [
            always(Text(table.scheduler, "bold")),
            *((part(10, Text(f"  {REPRICED}", "bold yellow"), Text("  repriced", "bold yellow")),) if frame.repriced else ()),
            *((part(10, Text(f"  {NOT_RECORDED_CAPACITY}", "bold yellow"), Text("  what-if slots", "bold yellow")),)
              if frame.capacity_ignored else ()),
            *self._connection(frame),
            *bound_part(frame.bound),
            *status_text(frame),  # a run of several replicas: the one shown (or all) first
            part(5, f"  t={seconds(s.t)}s"),
            part(6, f"  v={amount(s.v)}" if frame.has_meters and own_v else ""),
            part(2, f"  c_max={amount(s.c_max)}"),
            always("  "),
            *seq_position(frame),
            kind_part(frame, ("dispatch", "idle_reset")),
            *(() if one else (self._slots(frame, slots),
                              part(8, f"  waiting {count(s.queued_total)}", f"  wait {count(s.queued_total)}"))),
            *self._play(frame),
            part(9, Text(f"  loading {percent(frame.loaded, 0)}", "yellow") if frame.loading and frame.loaded is not None else ""),
        ]
        self.set_text([FittedLine(parts)])

    @staticmethod
    def _slots(frame: Frame, slots: str) -> Part:
        """Slots in flight, of how many; with --slots auto, ``slots auto``, and each upstream's limit when there are several."""
        inflight = count(frame.state.inflight)
        if not frame.limits:
            return part(8, f"  in flight {inflight}/{slots}", f"  slots {inflight}/{slots}")
        each = f" ({'+'.join(count(n) for n in frame.limits.values())})" if len(frame.limits) > 1 else ""
        return part(8, f"  in flight {inflight}/{slots} slots auto{each}", f"  slots auto {inflight}/{slots}")

    @staticmethod
    def _connection(frame: Frame) -> tuple[Part, ...]:
        """A live stream's connection, right after the scheduler's name so that any width shows it."""
        link = frame.connection
        if link is None:
            return ()
        text, style = connection_part(link, time.monotonic())
        viewing = (always(Text(f"  {link.viewing} (e: the next);", "bold")),) if link.viewing is not None else ()
        return (*viewing, always(Text(f"  {text}", style)))

    @staticmethod
    def _play(frame: Frame) -> tuple[Part, ...]:
        if frame.loaded is not None or frame.connection is None:
            state = Text("  ▶ playing", "bold green") if frame.playing else Text("  ■ paused", "dim")
            return part(7, state), part(1, f" {amount(frame.speed)} ev/s")
        return (part(7, Text("  following the newest" if frame.playing else "  paused (space follows again)", "dim"),
                     Text("  following" if frame.playing else "  paused", "dim")),)
