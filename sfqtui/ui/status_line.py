"""One line: scheduler (and, for a run of replicas, the one shown: k cycles), time, v, c_max, the seq of the current
event / the last seq and its kind, slots, play state."""

from __future__ import annotations

from rich.text import Text

from sfqtui.core.numbers import fmt
from sfqtui.ui.frame import Frame
from sfqtui.ui.replicas import status_text
from sfqtui.ui.text_view import TextView


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
            *replicas,
            f"  t={fmt(s.t)}s",
            f"  v={fmt(s.v)}" if frame.has_meters and own_v else "",
            f"  c_max={fmt(s.c_max)}",
            "  seq ",
            (f"{table.first_seq + frame.k:,}" if frame.k >= 0 else "-", "bold"),
            f"/{table.first_seq + len(table) - 1:,} ",
            (kind, "bold reverse" if kind in ("dispatch", "idle_reset") else "bold"),
            "" if one else f"  in flight {s.inflight}/{frame.slots if frame.slots else '?'}",
            "" if one else f"  waiting {s.queued_total}",
            *self._play(frame),
            (f"  loading {frame.loaded:.0%}", "yellow") if frame.loading and frame.loaded is not None else "",
            no_wrap=True,
            overflow="ellipsis",
        )
        self.set_text([text])

    @staticmethod
    def _play(frame: Frame) -> tuple[tuple[str, str] | str, ...]:
        if frame.loaded is not None or frame.connection is None:
            return (("  ▶ playing" if frame.playing else "  ■ paused", "bold green" if frame.playing else "dim"), f" {fmt(frame.speed)} ev/s")
        style = {"live": "bold green", "reconnecting": "bold yellow", "connecting": "yellow"}.get(frame.connection, "bold red")
        following = "  following the newest" if frame.playing else "  paused (space follows again)"
        return (f"  ● {frame.connection}", style), (following, "dim")
