"""One line: scheduler (and, for a run of replicas, the one shown: k cycles), time, v, c_max, the seq of the current
event (and the last seq) and its kind, slots, play state, and for a live stream its connection (sfqtui.ui.connection)."""

from __future__ import annotations

import time

from rich.text import Text

from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import amount, count, percent, seconds
from sfqtui.ui.connection import connection_part
from sfqtui.ui.frame import Frame
from sfqtui.ui.replicas import status_text
from sfqtui.ui.text_view import TextView


def seq_position(table: EventTable, k: int) -> tuple[str, tuple[str, str], str]:
    """Where the cursor is, as the log's seq column numbers events: ``seq 397 (last 397)``."""
    last = len(table) - 1
    at = count(table.first_seq + k) if k >= 0 else "-"
    return "seq ", (at, "bold"), f" (last {count(table.first_seq + last)})" if last >= 0 else " (no events yet)"


class StatusLine(TextView):
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; overflow: hidden hidden; }
    """

    def show(self, frame: Frame) -> None:
        s, table = frame.state, frame.table
        kind = table.kind_name(frame.k) if frame.k >= 0 else "start"
        replicas = status_text(frame)  # a run of several replicas: the one shown (or all) first
        own_v = frame.replicas is None or not frame.replicas.count or not frame.replicas.split
        one = frame.replicas is not None and frame.options.replica is not None and frame.options.replica < frame.replicas.count
        text = Text.assemble(
            (f"{table.scheduler}", "bold"),
            *self._connection(frame),
            *replicas,
            f"  t={seconds(s.t)}s",
            f"  v={amount(s.v)}" if frame.has_meters and own_v else "",
            f"  c_max={amount(s.c_max)}",
            "  ",
            *seq_position(table, frame.k),
            " ",
            (kind, "bold reverse" if kind in ("dispatch", "idle_reset") else "bold"),
            "" if one else f"  in flight {count(s.inflight)}/{count(frame.slots) if frame.slots else '?'}",
            "" if one else f"  waiting {count(s.queued_total)}",
            *self._play(frame),
            (f"  loading {percent(frame.loaded, 0)}", "yellow") if frame.loading and frame.loaded is not None else "",
            no_wrap=True,
            overflow="ellipsis",
        )
        self.set_text([text])

    @staticmethod
    def _connection(frame: Frame) -> tuple[tuple[str, str], ...]:
        """A live stream's connection, right after the scheduler's name so that any width shows it."""
        link = frame.connection
        if link is None:
            return ()
        text, style = connection_part(link, time.monotonic())
        viewing = ((f"  {link.viewing} (e: the next);", "bold"),) if link.viewing is not None else ()
        return (*viewing, (f"  {text}", style))

    @staticmethod
    def _play(frame: Frame) -> tuple[tuple[str, str] | str, ...]:
        if frame.loaded is not None or frame.connection is None:
            return (("  ▶ playing" if frame.playing else "  ■ paused", "bold green" if frame.playing else "dim"), f" {amount(frame.speed)} ev/s")
        return (("  following the newest" if frame.playing else "  paused (space follows again)", "dim"),)
