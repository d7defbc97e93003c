"""The meter band: one row per user, its meter drawn inside [v, v + c_max].

A Line API view: only the visible rows are drawn, and a step redraws only the rows that
changed, so hundreds or thousands of users scroll smoothly. Users idle for longer than
``FOLD_AFTER_S`` fold into one summary line. A run of several replicas draws a section
per replica shown, each user in its replica's own band (ui/replicas.py).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.strip import Strip

from sfqtui.core.log.timeline import State
from sfqtui.core.numbers import fmt
from sfqtui.ui.clicks import UserClicked
from sfqtui.ui.frame import Frame
from sfqtui.ui.line_view import LineView
from sfqtui.ui.replicas import BandPart, band_parts
from sfqtui.ui.text_view import TextView

SORTS = ("meter", "name", "share")
NAME_W = 14
NUM_W = 9
FOLD_AFTER_S = 30.0
INF = float("inf")

_BACKLOGGED = Style(bold=True)
_IDLE = Style(dim=True)
_PICKED = Style(bold=True, reverse=True)
_BAND = Style(color="grey50")
_MARK_Q = Style(color="green", bold=True)
_MARK_IDLE = Style(color="grey62")
_HEADING = Style(color="cyan", bold=True)
HEADING = -1  # the row of a section's heading (a replica's), in place of a user code


def band_cells(width: int) -> int:
    """How wide the band is in a row ``width`` cells wide (the name and numbers take the rest)."""
    return max(10, width - (NAME_W + NUM_W + 6 + 4 + 6 + 6))


class MeterHeader(TextView):
    DEFAULT_CSS = "MeterHeader { height: 2; color: $text-muted; overflow: hidden hidden; }"

    def show(self, frame: Frame, band_width: int) -> None:
        traits = frame.table.traits
        what = "queued"
        if traits is not None and traits.reading:
            named = f"{traits.value_name} {traits.value_symbol}"
            what = named if len(named) <= NUM_W else traits.value_name
        if frame.band == "virtual":
            left, right = "v", "v+c_max"
        elif frame.band == "credit":
            left, right = "0", "c_max"
        elif frame.band == "lowest" and traits is not None:
            lowest = "min " + traits.value_symbol.split("_")[0]  # min C: the lowest among the waiting
            left, right = lowest, f"{lowest}+c_max"
        else:
            left, right = "0", "most queued"
        labels = (left + " " * max(1, band_width - len(left) - len(right)) + right)[:band_width]
        scale = "├" + "─" * max(0, band_width - 2) + "┤"
        first = f"{'user':<{NAME_W}} {labels} {what:>{NUM_W}} {'queued':>6} {'w':>4} {'share':>6}"
        second = f"{('by ' + frame.options.sort)[:NAME_W]:<{NAME_W}} {scale}"
        self.set_text([Text(first, "bold", no_wrap=True, overflow="crop"), Text(second, "dim", no_wrap=True, overflow="crop")])


class MeterBand(LineView, can_focus=True):
    DEFAULT_CSS = "MeterBand { height: 1fr; }"
    HELP = "Click a user to show only that user's events in the log (again: everyone)."

    GROW_ONLY = True  # users fold and unfold on most steps of a long trace

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._frame: Frame | None = None
        self._parts: list[BandPart] = []  # the band's sections: one, or one per replica shown
        self._rows: list[int] = []  # each row's user code (HEADING: a section's heading)
        self._row_parts: list[int] = []  # each row's section
        self._values: list[list[float]] = []  # per section, per user
        self._most_queued = 1
        self._lowest: list[float] = []  # band "lowest", per section: the smallest number among the waiting users
        self._folded = 0

    @property
    def band_width(self) -> int:
        return band_cells(self.scrollable_content_region.width)

    def show(self, frame: Frame) -> None:
        if self._frame is not None and frame.table is not self._frame.table:
            self.reset_extent()
            self.forget_lines()  # user codes name other users now
        elif self._frame is not None and (frame.options.show_folded, frame.options.replica) != \
                (self._frame.options.show_folded, self._frame.options.replica):
            self.reset_extent()  # folding, or another replica, takes rows away for good
        self._frame = frame
        self._parts = band_parts(frame) or [BandPart(None, frame.state, None)]
        self._values = [self._shown_values(frame, part.state) for part in self._parts]
        self._most_queued = max((max(part.state.queued, default=0) for part in self._parts), default=0) or 1
        if frame.band == "lowest":
            self._lowest = [_lowest(values, part.state) for values, part in zip(self._values, self._parts)]
        self._rows, self._row_parts, self._folded = [], [], 0
        for p, part in enumerate(self._parts):
            users, folded = self._order(frame, part.state, self._values[p])
            if part.heading is not None:
                users.insert(0, HEADING)
            self._rows += users
            self._row_parts += [p] * len(users)
            self._folded += folded
        self.redraw()

    def row_count(self) -> int:
        return len(self._rows) + (1 if self._folded else 0)

    def on_click(self, event: Click) -> None:
        hit = self.row_at(event)
        if hit is not None and hit[0] < len(self._rows) and self._rows[hit[0]] != HEADING and self._frame is not None:
            self.post_message(UserClicked(self, self._frame.table.users[self._rows[hit[0]]]))

    @staticmethod
    def _shown_values(frame: Frame, s: State) -> list[float]:
        """Each user's own number (meter, counter, deficit) or, for schedulers without
        one, its queue length; inf for none yet."""
        traits = frame.table.traits
        if traits is None or not traits.reading:
            return [float(q) for q in s.queued]
        return [m if m == m else INF for m in s.value]

    def _order(self, frame: Frame, s: State, values: list[float]) -> tuple[list[int], int]:
        table = frame.table
        last_event, queued, inflight_of, times, now = s.last_event, s.queued, s.inflight_of, table.t, s.t
        show_folded, sort = frame.options.show_folded, frame.options.sort
        visible, folded = [], 0
        for u in table.users_by_name():  # in name order: the stable sorts below break ties by name
            last = last_event[u] if u < len(last_event) else -1
            if last < 0:
                if u < len(queued) and (queued[u] or inflight_of[u]):
                    visible.append(u)  # waiting since before this window of a live stream
                continue  # no event of this user yet
            if not show_folded and queued[u] == 0 and inflight_of[u] == 0 and now - times[last] > FOLD_AFTER_S:
                folded += 1
            else:
                visible.append(u)
        if sort == "share":
            visible.sort(key=s.charged.__getitem__, reverse=True)
        elif sort == "meter":  # backlogged users first, each group by meter
            visible.sort(key=values.__getitem__)
            visible.sort(key=[q == 0 for q in queued].__getitem__)
        return visible, folded

    def row_key(self, row: int, width: int) -> Hashable:
        if row == len(self._rows):
            return self._folded
        assert self._frame is not None
        part = self._row_parts[row]
        if self._rows[row] == HEADING:
            return self._parts[part].heading
        return self._cells(self._frame, part, self._rows[row], width)

    def draw_row(self, row: int, width: int, key: Hashable) -> Strip:
        if row == len(self._rows):
            text = f"⋯ {self._folded} users idle for over {FOLD_AFTER_S:g} s (a: show them)"
            return Strip([Segment(text, self.base_style + _IDLE)])
        if self._rows[row] == HEADING:
            return Strip([Segment(str(key)[:width], self.base_style + _HEADING)])
        assert isinstance(key, RowCells) and self._frame is not None
        return self._draw(key, self._frame.table.users[key.user], width)

    def _cells(self, frame: Frame, part: int, u: int, width: int) -> RowCells:
        """What the row of user u in section ``part`` shows: the key its drawn line is kept under."""
        s = self._parts[part].state
        band = band_cells(width)
        waiting = s.queued[u] > 0
        value = self._values[part][u]
        mark_at, mark, fill = None, "", 0
        kind = frame.band
        if kind == "virtual" and s.c_max > 0 and value != INF:
            position = (value - s.v) / s.c_max
            mark_at = 0 if position < 0 else min(band - 1, round(position * (band - 1)))
            mark = "◂" if position < 0 else ("●" if waiting else "○")
        elif kind == "credit" and s.c_max > 0 and value != INF:
            mark_at = max(0, min(band - 1, round(value / s.c_max * (band - 1))))
            mark = "●" if waiting else "○"
        elif kind == "lowest" and s.c_max > 0 and value != INF:
            position = (value - self._lowest[part]) / s.c_max
            mark_at = 0 if position < 0 else min(band - 1, round(position * (band - 1)))
            mark = "◂" if position < 0 else "▸" if position > 1 else ("●" if waiting else "○")
        elif kind == "queue":
            fill = round(s.queued[u] / self._most_queued * band)
        overall = frame.state  # a user's share of the run's cost, whichever replicas it was charged on
        share = overall.charged[u] / (overall.charged_total or 1.0)
        number = fmt(value if value != INF else None, NUM_W)
        numbers = f" {number} {s.queued[u]:>6} {fmt(frame.table.weight(u)):>4} {share:>6.1%}"
        replica = self._parts[part].replica
        picked = frame.picked == u and (replica is None or replica == frame.table.replica_of(frame.k))
        return RowCells(u, band, picked, waiting, waiting or s.inflight_of[u] > 0, mark_at, mark, fill, numbers)

    def _draw(self, c: RowCells, name: str, width: int) -> Strip:
        cells = [" "] * c.band
        cells[: c.fill] = ["▇"] * c.fill
        for i in (0, c.band - 1):
            if c.mark_at != i:
                cells[i] = "│"
        name = name if len(name) <= NAME_W else name[: NAME_W - 1] + "…"
        under = self.base_style
        base = under + (_PICKED if c.picked else (_BACKLOGGED if c.active else _IDLE))
        band_style = under + (_BAND + _PICKED if c.picked else _BAND)
        mark_style = under + (_MARK_Q if c.waiting else _MARK_IDLE) + (_PICKED if c.picked else Style())
        segments = [Segment(f"{name:<{NAME_W}} ", base)]
        if c.mark_at is not None:
            segments += [
                Segment("".join(cells[: c.mark_at]), band_style),
                Segment(c.mark, mark_style),
                Segment("".join(cells[c.mark_at + 1 :]), band_style),
            ]
        else:
            segments.append(Segment("".join(cells), mark_style if c.waiting else band_style))
        segments.append(Segment(c.numbers.ljust(width - NAME_W - 1 - c.band), base))
        return Strip(segments)


def _lowest(values: list[float], s: State) -> float:
    """The smallest number among the waiting users (else among all that have one)."""
    waiting = [values[u] for u in s.backlogged()]
    return min(waiting or [x for x in values if x != INF] or [0.0])


class RowCells(NamedTuple):
    user: int
    band: int
    picked: bool
    waiting: bool
    active: bool
    mark_at: int | None
    mark: str
    fill: int
    numbers: str
