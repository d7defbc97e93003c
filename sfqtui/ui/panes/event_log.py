"""The dispatch log: every event (or dispatches only, or one user's, or one replica's), a Line API view.

Only the visible rows are drawn, from the columnar table, so a log of millions of
events scrolls without lag. What it lists comes with each frame (the app's view
options). The row of the current event is highlighted and stays in the middle half of
the view: the view turns half a page when the cursor leaves it, so most steps redraw two
rows rather than the whole log. A click on a row says which event it shows, and whether
it fell on the user's name; the text of a search is marked in the rows that contain it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.strip import Strip
from textual.widgets import Static

from sfqtui.core.events import DISPATCH, GAP, IDLE_RESET
from sfqtui.core.log.table import EventTable, number
from sfqtui.core.numbers import TIME, Fixed, count
from sfqtui.ui.frame import Frame, ViewOptions
from sfqtui.ui.widgets.clicks import EventClicked
from sfqtui.ui.widgets.line_view import LineView

KIND_W = 8
USER_W = 10
REQUEST_MIN = 8  # the narrowest request column: an ellipsis and the id's last 7 characters
GIVE_WAY = ("v", "t", "cost")  # after the request id, the columns a narrow log leaves out, in this order


class LogColumns:
    """The log's columns for the rows on screen: one format per number column, its
    decimals from the magnitude of what the column shows (none if it is all whole) and its
    width from its widest value, so that no value shifts the columns after it. The
    scheduler's own number is titled by what it is (meter, counter, deficit), from the
    scheduler registry. A log of replicas has an ``r`` column before the user: the replica
    each event names (semantics §11; "-" for none).

    A log too narrow for every column never cuts a number: whole columns give way, the
    least needed first. The request id is shortened first (keeping its end, the part that
    tells ids apart, after an ellipsis: ``…conv:6062``) down to REQUEST_MIN, then left
    out; then v (the pane head and status line give it), t, cost (GIVE_WAY). The seq,
    kind, replica, user and the scheduler's own number always stay; when even they do not
    fit, the log scrolls sideways."""

    def __init__(self, table: EventTable) -> None:
        self.table = table
        traits = table.traits
        self.label = traits.value_name if traits is not None and traits.reading else ""
        self.cost = self.v = self.value = Fixed()
        self.replica_w = 1 if table.replicated else 0  # 0: no replica column
        self.widths: tuple[int, ...] = (3, 1, 4, 1, len(self.label))  # seq, t, cost, v, value
        self.request_w = len("request")  # 0: no request column
        self.shown = frozenset(GIVE_WAY)  # which of the columns that give way are shown

    def fit(self, events: Sequence[int], room: int = 0) -> bool:
        """Size the columns to these events (ascending) and to ``room`` cells (0: any width);
        whether any format, width or column changed."""
        table = self.table
        costs = [number(table.cost_at(k)) for k in events]
        vs = [number(table.v[k]) for k in events]
        values = [number(table.value[k]) for k in events]
        formats = Fixed.of(costs), Fixed.of(vs), Fixed.of(values)
        last = events[-1] if events else 0
        widths = (max(3, len(count(table.first_seq + last))), max(1, len(TIME(table.t[last])) if events else 1),
                  *(max(len(title), f.width(column)) for f, column, title in zip(formats, (costs, vs, values), ("cost", "v", self.label))))
        replica_w = max([1, *(len(self._replica(k)) for k in events)]) if table.replicated else 0
        request_w = max([len("request"), *(len(table.request_id(k) or "") for k in events)])
        shown, request_w = _columns_for(widths, replica_w, request_w, room)
        if (formats, widths, replica_w, request_w, shown) == ((self.cost, self.v, self.value), self.widths, self.replica_w, self.request_w, self.shown):
            return False
        self.cost, self.v, self.value = formats
        self.widths, self.replica_w, self.request_w, self.shown = widths, replica_w, request_w, shown
        return True

    def _replica(self, k: int) -> str:
        replica = self.table.replica_of(k)
        return "-" if replica is None else count(replica)

    def _line(self, seq: str, t: str, kind: str, replica: str, user: str, cost: str, v: str, value: str, request: str) -> str:
        seq_w, t_w, cost_w, v_w, value_w = self.widths
        shown = self.shown
        cells = [f"{seq:>{seq_w}}", *((f"{t:>{t_w}}",) if "t" in shown else ()), f"{kind:<{KIND_W}}",
                 *((f"{replica:>{self.replica_w}}",) if self.replica_w else ()), f"{user:<{USER_W}}",
                 *((f"{cost:>{cost_w}}",) if "cost" in shown else ()), *((f"{v:>{v_w}}",) if "v" in shown else ()),
                 f"{value:>{value_w}}", *((request,) if self.request_w else ())]
        return " ".join(cells)

    @property
    def header(self) -> str:
        return self._line("seq", "t", "kind", "r", "user", "cost", "v", self.label, f"{'request':<{self.request_w}}")

    @property
    def width(self) -> int:
        return len(self.header)

    @property
    def user_start(self) -> int:
        """Where the user column starts in a row."""
        seq_w, t_w = self.widths[:2]
        return seq_w + 1 + (t_w + 1 if "t" in self.shown else 0) + KIND_W + 1 + (self.replica_w + 1 if self.replica_w else 0)

    @property
    def request_start(self) -> int | None:
        """Where the request column starts in a row (None: not shown)."""
        return self.width - self.request_w if self.request_w else None

    def row(self, k: int) -> str:
        table = self.table
        kind = "idle rst" if table.kind[k] == IDLE_RESET else table.kind_name(k)
        return self._line(count(table.first_seq + k), TIME(table.t[k]), kind, self._replica(k) if self.replica_w else "",
                          _cut(table.user_name(k) or "", USER_W), self.cost(number(table.cost_at(k))),
                          self.v(number(table.v[k])), self.value(number(table.value[k])),
                          _tail(table.request_id(k) or "", self.request_w))


def _columns_for(widths: tuple[int, ...], replica_w: int, request_w: int, room: int) -> tuple[frozenset[str], int]:
    """Which of GIVE_WAY to show and how wide the request column is (0: left out), for rows of ``room`` cells."""
    seq_w, t_w, cost_w, v_w, value_w = widths
    sizes = {"t": t_w + 1, "cost": cost_w + 1, "v": v_w + 1}
    kept = seq_w + 1 + KIND_W + 1 + (replica_w + 1 if replica_w else 0) + USER_W + 1 + value_w
    left = room - kept - sum(sizes.values()) - 1
    if room <= 0 or left >= min(request_w, REQUEST_MIN):
        return frozenset(GIVE_WAY), request_w if room <= 0 else min(request_w, left)
    shown = set(GIVE_WAY)
    for name in GIVE_WAY:
        if kept + sum(sizes[n] for n in shown) <= room:
            break
        shown.discard(name)
    return frozenset(shown), 0


def _tail(text: str, width: int) -> str:
    """The end of ``text`` in ``width`` cells, after an ellipsis if it is longer: ``…conv:6062``."""
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]


def header_for(table: EventTable) -> str:
    """The column titles of a log before any row is shown."""
    return LogColumns(table).header


_CURSOR = Style(reverse=True, bold=True)
_CURSOR_DIFFERS = Style(reverse=True, bold=True, color="red")  # this dispatch differs from the other run's
_DISPATCH = Style(bold=True)
_RESET = Style(color="yellow", bold=True)
_GAP = Style(color="red", bold=True)  # events lost from a live stream
_OTHER = Style(dim=True)
_FOUND = Style(color="black", bgcolor="yellow", bold=True)  # the text of a search, where a row contains it


def _events(table: EventTable, start: int, end: int, user: int | None, dispatches_only: bool, replica: int | None) -> Iterator[int]:
    """The events start..end-1 of ``user`` (None: anyone), dispatches only or all, on ``replica`` (None: any)."""
    if dispatches_only:
        among: Sequence[int] = table.dispatches if user is None else table.user_dispatches[user]
        candidates: Iterable[int] = among[bisect_left(among, start) : bisect_left(among, end)]
    else:
        candidates = range(start, end)
    users, replicas = table.user, table.replica
    for k in candidates:
        if (user is None or users[k] == user) and (replica is None or replicas[k] == replica):
            yield k


def _cut(text: str, width: int) -> str:
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)


_ROW_STYLES = {DISPATCH: _DISPATCH, IDLE_RESET: _RESET, GAP: _GAP}


class EventLogHeader(Static):
    DEFAULT_CSS = "EventLogHeader { height: 1; color: $text-muted; }"

    def __init__(self, header: str = "", **kwargs: Any) -> None:
        super().__init__(header, **kwargs)
        self._header = header

    def show(self, header: str) -> None:
        if header != self._header:
            self._header = header
            self.update(header, layout=False)  # its size is its box's (one line, the box's width), whatever it says


def page_top(row: int, height: int) -> int:
    """The first row shown when ``row`` is the cursor: a function of the row alone, so the
    same event always looks the same, and it changes only every half page."""
    step = max(1, height // 2)
    return max(0, (row - height // 4) // step * step)


class EventLog(LineView, can_focus=True):
    """The log; ``header`` is the line of column titles above it, which it keeps as wide
    as the columns of the rows it shows."""

    DEFAULT_CSS = "EventLog { height: 1fr; }"
    HELP = "Click a row to go to its event; click a user's name to show only that user's events (again: everyone)."

    def __init__(self, header: EventLogHeader, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.header = header
        self.table: EventTable | None = None
        self._options = ViewOptions()  # what the rows were listed for
        self._listed = 0  # how many of the table's events the rows cover
        self.search_text = ""  # marked where a row's user or request contains it
        self.columns: LogColumns | None = None
        self._fitted: tuple[range, Sequence[int] | None, int] | None = None  # the rows and width the columns were last sized to
        self._rows: Sequence[int] | None = None  # None: every event (row i is event i)
        self._cursor_row = -1
        self._differs = False

    def row_count(self) -> int:
        if self.table is None:
            return 0
        return len(self.table) if self._rows is None else len(self._rows)

    def _event_at(self, row: int) -> int:
        return row if self._rows is None else self._rows[row]

    @property
    def listed(self) -> Sequence[int] | None:
        """The events listed, ascending (None: every event of the table)."""
        return self._rows

    def mark(self, text: str) -> None:
        """Mark ``text`` in the rows that contain it (empty: mark nothing)."""
        if text != self.search_text:
            self.search_text = text
            self.forget_lines()

    def on_click(self, event: Click) -> None:
        hit = self.row_at(event)
        if hit is None or self.table is None:
            return
        row, x = hit
        k = self._event_at(row)
        user = self.table.user_name(k)
        start = self.columns.user_start if self.columns is not None else 0
        on_user = user is not None and start <= x < start + len(_cut(user, USER_W).rstrip())
        self.post_message(EventClicked(self, k, user if on_user else None))

    def use(self, table: EventTable) -> None:
        """List the events of another table (a newly opened log or a re-run)."""
        self.table = table
        self.columns = LogColumns(table)
        self._fitted = None
        self.header.show(self.columns.header)
        self.forget_lines()
        self._rows = None
        self._list(self._options)

    def _list(self, options: ViewOptions) -> None:
        """Work out which events are listed. The table's own indices grow with it; one
        user's events (a list of our own) are extended by the events loaded since."""
        table = self.table
        assert table is not None
        grown = options == self._options and isinstance(self._rows, list)
        self._options, start, self._listed = options, self._listed if grown else 0, len(table)
        name = options.user_filter
        code = table.user_code.get(name) if name else None
        replica = options.replica if table.replicated else None
        if name and code is None:
            self._rows = []
        elif replica is None and code is not None and options.dispatches_only:
            self._rows = table.user_dispatches[code]
        elif replica is None and code is None:
            self._rows = table.dispatches if options.dispatches_only else None
        else:  # one user's events, or one replica's: a list of our own
            rows = self._rows if grown else []
            assert isinstance(rows, list)
            rows.extend(_events(table, start, self._listed, code, options.dispatches_only, replica))
            self._rows = rows

    def virtual_width(self) -> int:
        # Rows that fit scroll nowhere: 0 then, so that columns resized to other rows do not
        # change the virtual size, which would lay the whole screen out again.
        width = self.columns.width if self.columns is not None else 0
        return width if width > self.scrollable_content_region.width else 0

    def _fit_columns(self, top: int) -> None:
        """Size the columns to the rows from ``top`` on that fit in the view, and to its width."""
        width, height = self.scrollable_content_region.size
        rows = range(top, min(top + height, self.row_count()))
        if self.columns is None or (self._fitted is not None and self._fitted[0] == rows and self._fitted[1] is self._rows
                                    and self._fitted[2] == width):
            return  # the same rows at the same width as last time
        self._fitted = rows, self._rows, width
        if self.columns.fit([self._event_at(row) for row in rows], width):
            self.forget_lines()
        self.header.show(self.columns.header)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        self._fit_columns(round(new_value))  # scrolled by the mouse or the scrollbar: other rows, other widths
        super().watch_scroll_y(old_value, new_value)

    def show(self, frame: Frame, differs: bool = False) -> None:
        """Draw around the frame's event; ``differs``: mark it as a dispatch that the other
        run stepped beside this one sent differently."""
        if frame.table is not self.table:
            self._options = frame.options
            self.use(frame.table)
        elif frame.options != self._options or len(frame.table) != self._listed:
            self._list(frame.options)
        if self._rows is None:
            row = frame.k
        else:
            row = bisect_right(self._rows, frame.k) - 1
        self._cursor_row = row
        self._differs = differs
        top = page_top(row, self.scrollable_content_region.height)
        self._fit_columns(top)
        self.redraw(top=top)

    def resized(self) -> None:
        if self.table is not None:  # another height turns pages elsewhere: keep the cursor in view
            top = page_top(self._cursor_row, self.scrollable_content_region.height)
            self._fit_columns(top)
            self.redraw(top=top)

    def row_key(self, row: int, width: int) -> Hashable:
        return self._event_at(row), row == self._cursor_row, row == self._cursor_row and self._differs, self.search_text

    def draw_row(self, row: int, width: int, key: Hashable) -> Strip:
        table = self.table
        assert table is not None
        k = self._event_at(row)
        kind = table.kind[k]
        cursor = _CURSOR_DIFFERS if self._differs else _CURSOR
        style = cursor if row == self._cursor_row else _ROW_STYLES.get(kind, _OTHER)
        assert self.columns is not None
        text = self.columns.row(k)
        if not self.search_text:
            return Strip([Segment(text, self.base_style + style)])
        line = Text(text, self.base_style + style)
        start, request = self.columns.user_start, self.columns.request_start
        for cell in (range(start, start + USER_W), *(() if request is None else (range(request, len(text)),))):
            _mark(line, cell, self.search_text)
        return Strip(line.render(self.app.console))


def _mark(line: Text, cell: range, text: str) -> None:
    """Mark every occurrence of ``text`` (ignoring case) inside one cell of the line."""
    inside = line.plain[cell.start : cell.stop].casefold()
    wanted = text.casefold()
    at = inside.find(wanted)
    while at >= 0:
        line.stylize(_FOUND, cell.start + at, cell.start + at + len(wanted))
        at = inside.find(wanted, at + 1)
