"""The meter band: one row per user, its meter drawn inside [v, v + c_max].

A Line API view: only the visible rows are rendered, so hundreds or thousands of users
scroll smoothly. Users idle for longer than ``fold_after_s`` fold into one summary line.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from sfqtui.core.numbers import fmt
from sfqtui.ui.frame import Frame

SORTS = ("meter", "name", "share")
NAME_W = 14
NUM_W = 9
FOLD_AFTER_S = 30.0

_BACKLOGGED = Style(bold=True)
_IDLE = Style(dim=True)
_PICKED = Style(bold=True, reverse=True)
_BAND = Style(color="grey50")
_MARK_Q = Style(color="green", bold=True)
_MARK_IDLE = Style(color="grey62")


class MeterHeader(Static):
    DEFAULT_CSS = "MeterHeader { height: 2; color: $text-muted; }"

    def show(self, frame: Frame, band_width: int, sort: str) -> None:
        if frame.has_meters:
            left, right, what = "v", "v+c_max", "meter S_i"
        elif frame.table.scheduler == "drr":
            left, right, what = "0", "c_max", "deficit"
        else:
            left, right, what = "0", "most", "queued"
        labels = (left + " " * max(1, band_width - len(left) - len(right)) + right)[:band_width]
        scale = "├" + "─" * max(0, band_width - 2) + "┤"
        first = f"{'user':<{NAME_W}} {labels} {what:>{NUM_W}} {'queued':>6} {'w':>4} {'share':>6}"
        second = f"{('by ' + sort)[:NAME_W]:<{NAME_W}} {scale}"
        self.update(Text.assemble((first, "bold"), "\n", (second, "dim")), layout=False)


class MeterBand(ScrollView, can_focus=True):
    DEFAULT_CSS = "MeterBand { height: 1fr; }"

    sort: reactive[str] = reactive("meter")
    show_folded: reactive[bool] = reactive(False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._frame: Frame | None = None
        self._rows: list[int] = []
        self._folded = 0

    @property
    def band_width(self) -> int:
        return max(10, self.size.width - (NAME_W + NUM_W + 6 + 4 + 6 + 6))

    def show(self, frame: Frame) -> None:
        self._frame = frame
        self._rows, self._folded = self._order(frame)
        lines = len(self._rows) + (1 if self._folded else 0)
        self.virtual_size = Size(self.size.width, lines)
        self.refresh()

    def watch_sort(self) -> None:
        if self._frame is not None:
            self.show(self._frame)

    def watch_show_folded(self) -> None:
        if self._frame is not None:
            self.show(self._frame)

    def _order(self, frame: Frame) -> tuple[list[int], int]:
        s, table = frame.state, frame.table
        users = range(len(table.users))
        visible, folded = [], 0
        for u in users:
            if u >= len(s.last_event) or s.last_event[u] < 0:
                continue  # no event of this user yet
            idle_for = s.t - table.t[s.last_event[u]]
            if not self.show_folded and s.queued[u] == 0 and s.inflight_of[u] == 0 and idle_for > FOLD_AFTER_S:
                folded += 1
            else:
                visible.append(u)
        if self.sort == "name":
            visible.sort(key=lambda u: table.users[u])
        elif self.sort == "share":
            visible.sort(key=lambda u: (-s.charged[u], table.users[u]))
        else:
            visible.sort(key=lambda u: (s.queued[u] == 0, self._value(frame, u), table.users[u]))
        return visible, folded

    @staticmethod
    def _value(frame: Frame, u: int) -> float:
        s = frame.state
        if frame.has_meters:
            m = s.meter[u]
        elif frame.table.scheduler == "drr":
            m = s.deficit[u]
        else:
            m = float(s.queued[u])
        return m if m == m else float("inf")

    def render_line(self, y: int) -> Strip:
        frame = self._frame
        width = self.size.width
        index = self.scroll_offset.y + y
        if frame is None or index >= len(self._rows) + (1 if self._folded else 0):
            return Strip.blank(width)
        if index == len(self._rows):
            text = f"⋯ {self._folded} users idle for over {FOLD_AFTER_S:g} s (a: show them)"
            return Strip([Segment(text.ljust(width)[:width], _IDLE)])
        return self._user_line(frame, self._rows[index], width)

    def _user_line(self, frame: Frame, u: int, width: int) -> Strip:
        s, table = frame.state, frame.table
        band = self.band_width
        waiting = s.queued[u] > 0
        value = self._value(frame, u)
        cells = [" "] * band
        mark_at = None
        if frame.has_meters and s.c_max > 0 and value != float("inf"):
            position = (value - s.v) / s.c_max
            mark_at = 0 if position < 0 else min(band - 1, round(position * (band - 1)))
            mark = "◂" if position < 0 else ("●" if waiting else "○")
        elif frame.table.scheduler == "drr" and s.c_max > 0 and value != float("inf"):
            mark_at = max(0, min(band - 1, round(value / s.c_max * (band - 1))))
            mark = "●" if waiting else "○"
        elif not frame.has_meters:
            top = max(1, max(s.queued) if len(s.queued) else 1)
            fill = round(s.queued[u] / top * band)
            cells[:fill] = ["▇"] * fill
            mark = ""
        for i in (0, band - 1):
            if mark_at != i:
                cells[i] = "│"
        total = s.charged_total or 1.0
        name = table.users[u]
        name = name if len(name) <= NAME_W else name[: NAME_W - 1] + "…"
        picked = frame.picked == u
        base = _PICKED if picked else (_BACKLOGGED if waiting or s.inflight_of[u] else _IDLE)
        band_style = _BAND + _PICKED if picked else _BAND
        mark_style = (_MARK_Q if waiting else _MARK_IDLE) + (_PICKED if picked else Style())
        segments = [Segment(f"{name:<{NAME_W}} ", base)]
        if mark_at is not None:
            segments += [
                Segment("".join(cells[:mark_at]), band_style),
                Segment(mark, mark_style),
                Segment("".join(cells[mark_at + 1 :]), band_style),
            ]
        else:
            segments.append(Segment("".join(cells), mark_style if waiting else band_style))
        number = fmt(value if value != float("inf") else None, NUM_W)
        segments.append(Segment(f" {number} {s.queued[u]:>6} {fmt(table.weight(u)):>4} {s.charged[u] / total:>6.1%}", base))
        return Strip(segments).crop(0, width).extend_cell_length(width)
