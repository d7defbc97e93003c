"""The meter band: one row per user, its meter drawn inside [v, v + c_max].

Each row reads the user's lead S_i - v in cost units (only the difference matters, article
§7.2), so users stay apart whether v is 0.5 or 110,312,346; the header shows v once in
full, and the why panel the absolute meters. VTC's counters are read against the smallest
waiting counter, DRR's deficits as they are.

A Line API view: only the visible rows are drawn, and a step redraws only the rows that
changed, so hundreds or thousands of users scroll smoothly. Users idle for longer than
``FOLD_AFTER_S`` fold into one summary line. A run of several replicas draws a section
per replica shown, each user in its replica's own band (ui/replicas.py) and read against
that replica's own v (or lowest waiting counter), which its heading shows.
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
from sfqtui.core.numbers import Fixed, amount, count, counted, percent
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.replicas import BandPart, band_parts
from sfqtui.ui.panes.user_picks import band_columns, band_users, meters_or_inf, sorted_by_meter, sorted_by_share
from sfqtui.ui.widgets.clicks import UserClicked
from sfqtui.ui.widgets.line_view import LineView
from sfqtui.ui.widgets.text_view import TextView

SORTS = ("meter", "name", "share")
NAME_W = 14
MIN_NAME = 8  # a narrow pane cuts names to this before the numbers are cut
SHARE_W = 6  # 100.0%
MIN_BAND = 10
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


class BandLayout(NamedTuple):
    """How a step's rows are laid out: the band's cells and the number columns, sized to
    the values shown. ``title`` heads the scheduler's own number, counted from
    ``reference`` (v, or the smallest waiting counter) when it has one: only the
    difference matters (article §7.2), and it stays readable whatever v has grown to."""

    name: int = NAME_W  # the name column and the band, in the view's width now (a row drawn in another width fits its own)
    band: int = MIN_BAND
    title: str = ""  # "" for schedulers without a number of their own (the queue lengths are the column beside)
    reference: str = ""  # "v = 110,312,346", shown once in the header; "" when the numbers are absolute
    bases: tuple[float, ...] = (0.0,)  # per section of the band, the reference's value: what its numbers are counted from
    number: Fixed = Fixed()
    number_w: int = 0
    queued_w: int = len("queued")
    weight: Fixed = Fixed()
    weight_w: int = len("w")

    def fit(self, width: int) -> tuple[int, int]:
        """How wide the name column and the band are in a row ``width`` cells wide: the
        numbers come first, then the band down to MIN_BAND, then names down to MIN_NAME."""
        numbers_w = (1 + self.number_w if self.title else 0) + 1 + self.queued_w + 1 + self.weight_w + 1 + SHARE_W
        room = width - numbers_w - 2  # a space after the name, one spare at the end
        name = max(MIN_NAME, min(NAME_W, room - MIN_BAND))
        return name, max(MIN_BAND, room - name)

    @property
    def base(self) -> float:
        """What the numbers of the band's first (or only) section are counted from."""
        return self.bases[0]

    def numbers(self, value: float, queued: int, weight: float, share: float, part: int = 0) -> str:
        """A row's numbers in section ``part``; ``value`` is the user's own number (inf: none yet)."""
        own = f" {self.number(None if value == INF else value - self.bases[part]):>{self.number_w}}" if self.title else ""
        return f"{own} {count(queued):>{self.queued_w}} {self.weight(weight):>{self.weight_w}} {percent(share):>{SHARE_W}}"


def reference_of(frame: Frame, s: State) -> tuple[str, str, float] | None:
    """What the scheduler's per-user numbers in state ``s`` (the frame's, or a replica's)
    are read against, if anything, as (its name in the column's title, its name in the
    header, its value): v for the band [v, v + c_max]; for the band of the lowest (VTC), the
    smallest waiting counter (everyone's while nobody waits). DRR's deficits are read as
    they are."""
    traits = frame.table.traits
    if traits is None or not traits.reading:
        return None
    if traits.band == "virtual":
        return ("v", "v", s.v) if s.v == s.v else None
    if traits.band != "lowest":
        return None
    values = s.value
    waiting = [values[u] for u in s.backlogged() if values[u] == values[u]]
    known = waiting or [x for x in values if x == x]
    return ("min", f"min {traits.value_symbol}", min(known)) if known else None


def lay_out(frame: Frame, sections: list[tuple[State, list[int]]], values: list[list[float]], width: int) -> BandLayout:
    """The layout of the band's sections, each a state and the rows (user codes) drawn
    from it, in a view ``width`` cells wide: one format per column over every section,
    each section's numbers counted from its own reference."""
    table = frame.table
    traits = table.traits
    references = [reference_of(frame, state) for state, _ in sections]
    known = next((r for r in references if r is not None), None)
    title = ""
    if traits is not None and traits.reading:
        title = f"{traits.value_symbol} − {known[0]}" if known is not None else traits.value_name
    bases = tuple(r[2] if r is not None else 0.0 for r in references) or (0.0,)
    shown, weights, most_queued = band_columns(sections, values, bases, table.weights)
    c_max = frame.state.c_max
    number = Fixed.of(shown, scale=c_max or None, sign=known is not None)
    weight = Fixed.of(weights)
    number_w = max(len(title), number.width(shown)) if title else 0
    queued_w = max(len("queued"), len(count(most_queued)))
    weight_w = max(len("w"), weight.width(weights))
    if known is None:
        shown_reference = ""
    elif len(sections) > 1:  # replicas with meters of their own: each heading gives its replica's
        shown_reference = f"{known[1]}: each replica's own"
    else:
        shown_reference = f"{known[1]} = {amount(bases[0])}"
    layout = BandLayout(title=title, reference=shown_reference, bases=bases, number=number, number_w=number_w,
                        queued_w=queued_w, weight=weight, weight_w=weight_w)
    name_w, band = layout.fit(width)
    return layout._replace(name=name_w, band=band)


class MeterHeader(TextView):
    DEFAULT_CSS = "MeterHeader { height: 2; color: $text-muted; overflow: hidden hidden; }"

    def show(self, frame: Frame, layout: BandLayout) -> None:
        traits, band_width = frame.table.traits, layout.band
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
        own = f" {layout.title:>{layout.number_w}}" if layout.title else ""
        name_w = layout.name
        first = f"{'user':<{name_w}} {labels}{own} {'queued':>{layout.queued_w}} {'w':>{layout.weight_w}} {'share':>{SHARE_W}}"
        second = f"{('by ' + frame.options.sort)[:name_w]:<{name_w}} {scale}" + (f"  {layout.reference}" if layout.reference else "")
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
        self._folded = 0
        self.band_layout = BandLayout()

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
        self._rows, self._row_parts, self._folded = [], [], 0
        sections = []
        for p, part in enumerate(self._parts):
            users, folded = self._order(frame, part.state, self._values[p])
            sections.append((part.state, users))
            rows = [HEADING, *users] if part.heading is not None else users
            self._rows += rows
            self._row_parts += [p] * len(rows)
            self._folded += folded
        self.band_layout = lay_out(frame, sections, self._values, self.scrollable_content_region.width)
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
        return meters_or_inf(s)

    def _order(self, frame: Frame, s: State, values: list[float]) -> tuple[list[int], int]:
        # in name order: the stable sorts below break ties by name
        visible, folded = band_users(frame.table, s, frame.options.show_folded, FOLD_AFTER_S)
        sort = frame.options.sort
        if sort == "share":
            visible = sorted_by_share(visible, s)
        elif sort == "meter":  # backlogged users first, each group by meter
            visible = sorted_by_meter(visible, s, values)
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
            text = f"⋯ {counted(self._folded, 'user')} idle for over {FOLD_AFTER_S:g} s (a: show them)"
            return Strip([Segment(text, self.base_style + _IDLE)])
        if self._rows[row] == HEADING:
            return Strip([Segment(str(key)[:width], self.base_style + _HEADING)])
        assert isinstance(key, RowCells) and self._frame is not None
        return self._draw(key, self._frame.table.users[key.user], width)

    def _cells(self, frame: Frame, part: int, u: int, width: int) -> RowCells:
        """What the row of user u in section ``part`` shows: the key its drawn line is kept under."""
        s, layout = self._parts[part].state, self.band_layout
        name_w, band = layout.fit(width)
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
            position = (value - layout.bases[part]) / s.c_max  # the base: the section's lowest waiting counter
            mark_at = 0 if position < 0 else min(band - 1, round(position * (band - 1)))
            mark = "◂" if position < 0 else "▸" if position > 1 else ("●" if waiting else "○")
        elif kind == "queue":
            fill = round(s.queued[u] / self._most_queued * band)
        overall = frame.state  # a user's share of the run's cost, whichever replicas it was charged on
        share = overall.charged[u] / (overall.charged_total or 1.0)
        numbers = layout.numbers(value, s.queued[u], frame.table.weight(u), share, part)
        replica = self._parts[part].replica
        picked = frame.picked == u and (replica is None or replica == frame.table.replica_of(frame.k))
        return RowCells(u, name_w, band, picked, waiting, waiting or s.inflight_of[u] > 0, mark_at, mark, fill, numbers)

    def _draw(self, c: RowCells, name: str, width: int) -> Strip:
        cells = [" "] * c.band
        cells[: c.fill] = ["▇"] * c.fill
        for i in (0, c.band - 1):
            if c.mark_at != i:
                cells[i] = "│"
        name = name if len(name) <= c.name_w else name[: c.name_w - 1] + "…"
        under = self.base_style
        base = under + (_PICKED if c.picked else (_BACKLOGGED if c.active else _IDLE))
        band_style = under + (_BAND + _PICKED if c.picked else _BAND)
        mark_style = under + (_MARK_Q if c.waiting else _MARK_IDLE) + (_PICKED if c.picked else Style())
        segments = [Segment(f"{name:<{c.name_w}} ", base)]
        if c.mark_at is not None:
            segments += [
                Segment("".join(cells[: c.mark_at]), band_style),
                Segment(c.mark, mark_style),
                Segment("".join(cells[c.mark_at + 1 :]), band_style),
            ]
        else:
            segments.append(Segment("".join(cells), mark_style if c.waiting else band_style))
        segments.append(Segment(c.numbers.ljust(width - c.name_w - 1 - c.band), base))
        return Strip(segments)


class RowCells(NamedTuple):
    user: int
    name_w: int
    band: int
    picked: bool
    waiting: bool
    active: bool
    mark_at: int | None
    mark: str
    fill: int
    numbers: str
