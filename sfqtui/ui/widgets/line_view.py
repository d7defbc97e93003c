"""The base of the dashboard's Line API views: a step redraws only the lines that changed.

A subclass says how many rows it has and how to draw one. After each change of state the
app calls `redraw`, which draws the visible rows, compares each with the line on screen
and refreshes only those that differ (the way dolphie's refresh loop updates only the
rows that changed). Textual then renders and sends just those lines, which is what keeps
a step within a frame.

A view that is resized (the terminal, the help panel, a pane added or dropped) draws its
lines afresh at the new width and says so with a `Remeasured` message, so the app can
redraw whatever depends on a view's size without waiting for the next step.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.events import MouseEvent, Resize
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

KEPT_LINES = 64  # per view: a few screens; every kept line is ~20 objects the garbage collector walks


class LineView(ScrollView, can_focus=False, inherit_bindings=False):
    """Not focusable unless a subclass says so (the dashboard's keys are the app's), and with
    only the vertical scroll keys: ScrollView's left/right/home/end would shadow the app's
    step, back, first and last keys whenever a view is focused, in the help panel too, and
    take them over when a narrow view scrolls sideways."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Scroll up", show=False),
        Binding("down", "scroll_down", "Scroll down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    class Remeasured(Message):
        """The view's size changed (posted after it redrew itself at the new size)."""

    GROW_ONLY: ClassVar[bool] = False
    """Keep the scroll range from shrinking until the view is resized or `reset_extent` is
    called. For views whose row count changes on most steps: a new scroll range makes
    Textual lay out the whole screen again, which costs more than the step itself."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._drawn: dict[int, Strip] = {}  # row -> the line on screen (visible rows only)
        self._by_key: dict[Hashable, Strip] = {}
        self._base: Style | None = None
        self._extent = 0
        self._rendering = False
        self._place: tuple[int, int, int] | None = None  # while rendering: the scroll offset and the lines' width

    # What a subclass provides

    def row_count(self) -> int:
        raise NotImplementedError

    def row_key(self, row: int, width: int) -> Hashable:
        """A key for what ``row`` shows (which exists), if telling it is cheaper than
        drawing it: a line is drawn once per key while the view's size and colours stay."""
        return None

    def draw_row(self, row: int, width: int, key: Hashable) -> Strip:
        """The line of ``row`` (which exists), ideally exactly ``width`` cells: shorter
        lines are padded and longer ones cropped here, at a cost."""
        raise NotImplementedError

    def virtual_width(self) -> int:
        """How wide the rows are, for a view that scrolls sideways (0: rows fit the view)."""
        return 0

    def resized(self) -> None:
        """Called when the view's size changes, before it is drawn again."""

    # Drawing

    @property
    def base_style(self) -> Style:
        """The widget's own colours, under every line (looked up once, not per line)."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def reset_extent(self) -> None:
        """Let a GROW_ONLY view's scroll range shrink to its rows at the next redraw."""
        self._extent = 0

    def forget_lines(self) -> None:
        """Draw every line afresh next time (what the rows show has changed wholesale)."""
        self._drawn.clear()
        self._by_key.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base = None
        self.forget_lines()

    def on_resize(self, event: Resize) -> None:
        self.forget_lines()
        self._extent = 0
        self.resized()
        self.refresh()  # the screen may have been painted at the new size with the old lines
        self.post_message(self.Remeasured())

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        self.forget_lines()
        super().watch_scroll_x(old_value, new_value)

    def watch_show_vertical_scrollbar(self) -> None:
        self.forget_lines()  # the lines are narrower or wider now

    def redraw(self, top: int | None = None) -> None:
        """Refresh the visible lines that differ from what is on screen (scrolled to row
        ``top`` first, if given)."""
        count = self.row_count()
        self._extent = max(count, self._extent) if self.GROW_ONLY else count
        size = Size(self.virtual_width(), self._extent)
        if size != self.virtual_size:
            self.virtual_size = size
        width, height = self.scrollable_content_region.size
        last_top = max(0, count - height)
        if top is None and self.scroll_offset.y > last_top:
            top = last_top  # never scrolled past the last row into a kept, empty extent
        if top is not None and not self.scroll_y == self.scroll_target_y == top:  # most steps leave a view where it was
            # forced: until the next layout Textual does not know the view has grown
            # scrollable, and would leave a view that had no rows at its top
            self.scroll_to(y=top, animate=False, immediate=True, force=True)
        x, top = self.scroll_offset
        drawn = {row: self._line(row, count, x, width) for row in range(top, top + height)}
        changed = [row for row, strip in drawn.items() if self._drawn.get(row) != strip]
        self._drawn = drawn
        for first, rows in _runs(changed):
            self.refresh_lines(first, rows)

    def row_at(self, event: MouseEvent) -> tuple[int, int] | None:
        """The row under the mouse and the column in it (scrolled sideways too), or None
        when the pointer is off the rows (on a scrollbar or past the last row)."""
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        x, top = self.scroll_offset
        row = top + offset.y
        return (row, x + offset.x) if row < self.row_count() else None

    def render_lines(self, crop: Region) -> list[Strip]:
        self._rendering = True
        try:
            return super().render_lines(crop)
        finally:
            self._rendering, self._place = False, None

    def render_line(self, y: int) -> Strip:
        place = self._place
        if place is None:
            x, top = self.scroll_offset
            place = x, top, self.scrollable_content_region.width
            if self._rendering:  # the screen asks for a view's changed lines one by one: where they go is looked up once
                self._place = place
        x, top, width = place
        strip = self._drawn.get(top + y)
        if strip is None or strip.cell_length != width:  # drawn before a resize this view has not heard of yet
            strip = self._drawn[top + y] = self._line(top + y, self.row_count(), x, width)
        return strip

    def _line(self, row: int, count: int, x: int, width: int) -> Strip:
        if row >= count:
            return Strip.blank(width, self.base_style)
        key = self.row_key(row, x + width)
        if key is not None and (strip := self._by_key.get(key)) is not None:
            return strip
        strip = self.draw_row(row, x + width, key)
        if x != 0 or strip.cell_length != width:
            strip = strip.crop_extend(x, x + width, self.base_style)
        if key is not None:
            if len(self._by_key) >= KEPT_LINES:
                self._by_key.clear()
            self._by_key[key] = strip
        return strip


def _runs(rows: list[int]) -> Iterator[tuple[int, int]]:
    """Runs of consecutive rows in an ascending list, as (first row, number of rows)."""
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i] != rows[i - 1] + 1:
            yield rows[start], i - start
            start = i
