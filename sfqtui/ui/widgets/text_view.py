"""A Line API view of text that changes every step: the why panel, the status line, headers.

The text is wrapped into lines once per change, and only the lines that differ from the
screen are redrawn. A part may be a FittedLine, laid out at the view's width (shortened
or left out part by part, never cut mid-number) each time it is wrapped. A Static would instead render all of it, and lay out the whole
screen again whenever its height changes; here the scroll range only grows (until the
view is resized), so text of another length costs no layout.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from rich.segment import Segment
from rich.text import Text
from textual.strip import Strip

from sfqtui.ui.widgets.fitted_line import FittedLine, text_key
from sfqtui.ui.widgets.line_view import KEPT_LINES, LineView


class TextView(LineView):
    DEFAULT_CSS = "TextView { height: 1fr; overflow-x: hidden; }"
    GROW_ONLY = True

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._parts: Sequence[Text | FittedLine] = ()
        self._lines: list[Strip] = []
        self._wrapped: dict[Hashable, list[Strip]] = {}  # each text's lines, by its content and width
        self._parts_key: tuple[Hashable, ...] | None = None  # the keys of the parts on screen

    @property
    def text(self) -> str:
        """The whole wrapped text, scrolled out of view or not."""
        return "\n".join(line.text.rstrip() for line in self._lines)

    def set_text(self, parts: Sequence[Text | FittedLine]) -> None:
        key = tuple(map(_key, parts))
        if key == self._parts_key:  # a resize or new colours forget it: the lines are wrapped again then
            return  # a step leaves many views' text as it was: wrapping and comparing it again would change nothing
        self._parts_key = key
        self._parts = parts
        self._wrap()
        self.redraw()

    def forget_lines(self) -> None:
        super().forget_lines()
        self._wrapped.clear()
        self._parts_key = None

    def reset_extent(self) -> None:
        super().reset_extent()
        self._parts_key = None

    def resized(self) -> None:
        self._wrap()

    def _wrap(self) -> None:
        width, height = self.content_region.size
        if width <= 0:
            return
        scrolls = self._extent > height
        if not scrolls:
            self._lines = self._lines_at(width)
            scrolls = len(self._lines) > height
        if scrolls:  # leave room for the scrollbar
            self._lines = self._lines_at(width - self.styles.scrollbar_size_vertical)

    def _lines_at(self, width: int) -> list[Strip]:
        width = max(1, width)
        lines: list[Strip] = []
        for given in self._parts:
            part = given.at(width) if isinstance(given, FittedLine) else given
            key = (text_key(part), width)
            wrapped = self._wrapped.get(key)
            if wrapped is None:
                if len(self._wrapped) >= KEPT_LINES:
                    self._wrapped.clear()
                wrapped = self._wrapped[key] = self._wrap_part(part, width)
            lines += wrapped
        return lines

    def _wrap_part(self, part: Text, width: int) -> list[Strip]:
        console, base = self.app.console, self.base_style
        strips = []
        plain = part.plain
        fits = part.no_wrap and part.justify in (None, "default") and "\n" not in plain and "\t" not in plain \
            and len(plain) <= width and part.cell_len <= width
        for line in [part] if fits else part.wrap(console, width):  # a line that fits is what wrap would return, without its cost
            # Text.render leaves out the text's own style when it has no spans
            under = base + console.get_style(line.style) if line.style else base
            segments = [Segment(text, under + style if style else under) for text, style, _ in line.render(console)]
            segments.append(Segment(" " * (width - line.cell_len), base))
            strips.append(Strip(segments, width))
        return strips

    def row_count(self) -> int:
        return len(self._lines)

    def draw_row(self, row: int, width: int, key: Hashable) -> Strip:
        return self._lines[row]


def _key(part: Text | FittedLine) -> Hashable:
    return part.key if isinstance(part, FittedLine) else text_key(part)
