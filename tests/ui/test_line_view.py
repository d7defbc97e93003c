"""The Line API views redraw only what changed, and keep the screen still while doing so."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

from rich.segment import Segment
from rich.text import Text
from textual.app import App, ComposeResult
from textual.strip import Strip

from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import Timeline
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.trace.load import load_trace
from sfqtui.trace.sources import ReplaySource
from sfqtui.ui.frame import Frame, ViewOptions
from sfqtui.ui.panes.event_log import EventLog, EventLogHeader, page_top
from sfqtui.ui.widgets.fitted_line import FittedLine, part
from sfqtui.ui.widgets.line_view import LineView
from sfqtui.ui.widgets.text_view import TextView

TRACES = Path(__file__).resolve().parents[2] / "traces"


class Rows(LineView):
    DEFAULT_CSS = "Rows { height: 10; }"

    def __init__(self) -> None:
        super().__init__()
        self.rows = [f"row {i}" for i in range(30)]
        self.refreshed: list[tuple[int, int]] = []
        self.drawn = 0

    def row_count(self) -> int:
        return len(self.rows)

    def row_key(self, row: int, width: int) -> Hashable:
        return self.rows[row], width

    def draw_row(self, row: int, width: int, key: Hashable) -> Strip:
        self.drawn += 1
        return Strip([Segment(self.rows[row])])

    def refresh_lines(self, y_start: int, line_count: int = 1) -> None:
        self.refreshed.append((y_start, line_count))
        super().refresh_lines(y_start, line_count)


class Grows(Rows):
    GROW_ONLY = True


class Holder(App[None]):
    def __init__(self, view: LineView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.view


async def test_a_redraw_refreshes_only_the_runs_of_rows_that_changed() -> None:
    view = Rows()
    async with Holder(view).run_test(size=(40, 12)) as pilot:
        view.redraw()
        await pilot.pause()
        view.refreshed.clear()
        view.rows[2] = view.rows[3] = view.rows[7] = "changed"
        view.rows[20] = "changed, but out of sight"
        view.redraw()
        assert view.refreshed == [(2, 2), (7, 1)]
        view.refreshed.clear()
        view.redraw()
        assert view.refreshed == []


async def test_a_line_is_drawn_once_per_key() -> None:
    view = Rows()
    async with Holder(view).run_test(size=(40, 12)) as pilot:
        view.redraw()
        await pilot.pause()
        drawn = view.drawn
        view.rows[0:10] = view.rows[1:11]  # every visible row moves up one: only one line is new
        view.redraw()
        assert view.drawn == drawn + 1


async def test_a_grow_only_view_keeps_its_scroll_range_until_reset() -> None:
    view = Grows()
    async with Holder(view).run_test(size=(40, 12)):
        view.redraw()
        del view.rows[20:]
        view.redraw()
        assert view.virtual_size.height == 30
        view.reset_extent()
        view.redraw()
        assert view.virtual_size.height == 20


async def test_a_grow_only_view_never_shows_only_its_empty_extent() -> None:
    view = Grows()
    async with Holder(view).run_test(size=(40, 12)) as pilot:
        view.redraw()
        await pilot.pause()
        view.scroll_to(y=20, animate=False, immediate=True)
        del view.rows[12:]
        view.redraw()
        assert view.virtual_size.height == 30 and view.scroll_offset.y == 12 - view.scrollable_content_region.height


async def test_a_text_view_keeps_each_texts_own_style() -> None:
    view = TextView()
    async with Holder(view).run_test(size=(40, 12)):
        view.set_text([Text("plain"), Text("header", "bold"), Text.assemble(("picked", "reverse"), " rest", style="dim")])
        plain, header, mixed = (list(view.render_line(y)) for y in range(3))
        assert not any(segment.style and segment.style.bold for segment in plain)
        assert header[0].style is not None and mixed[0].style is not None and mixed[1].style is not None
        assert header[0].style.bold
        assert mixed[0].style.reverse and mixed[0].style.dim
        assert mixed[1].style.dim and not mixed[1].style.reverse
        assert view.text.splitlines() == ["plain", "header", "picked rest"]



async def test_a_text_view_shows_a_new_style_of_the_same_words() -> None:
    """Text's own == leaves styles out: a text view must not take a restyled text for the one it shows."""
    view = TextView()
    async with Holder(view).run_test(size=(40, 12)):
        view.set_text([Text("same words"), FittedLine([part(1, Text("fitted"))])])
        view.set_text([Text("same words", "bold"), FittedLine([part(1, Text("fitted", "reverse"))])])
        words, fitted = (list(view.render_line(y)) for y in range(2))
        assert words[0].style is not None and words[0].style.bold
        assert fitted[0].style is not None and fitted[0].style.reverse
        view.set_text([Text.assemble(("same", "italic"), " words"), FittedLine([part(1, Text("fitted"))])])
        words, fitted = (list(view.render_line(y)) for y in range(2))
        assert words[0].style is not None and words[0].style.italic and not words[0].style.bold
        assert not (fitted[0].style and fitted[0].style.reverse)


async def test_a_text_view_given_the_same_text_after_a_resize_shows_it_at_the_new_width() -> None:
    view = TextView()
    words = " ".join(f"word{i}" for i in range(12))
    async with Holder(view).run_test(size=(40, 12)) as pilot:
        view.set_text([Text(words), FittedLine([part(None, Text("kept")), part(1, Text(" dropped when narrow"))])])
        await pilot.pause()
        assert view.text.splitlines()[-1] == "kept dropped when narrow"
        await pilot.resize_terminal(20, 12)
        await pilot.pause()
        view.set_text([Text(words), FittedLine([part(None, Text("kept")), part(1, Text(" dropped when narrow"))])])
        lines = view.text.splitlines()
        assert lines[-1] == "kept" and max(map(len, lines)) <= 20 and " ".join(lines[:-1]) == words
        assert [view.render_line(y).text.rstrip() for y in range(len(lines))] == lines


class Recoloured(Holder):
    CSS = "TextView.warm { color: red; }"


async def test_a_text_view_given_the_same_text_after_its_colours_change_draws_it_in_the_new_ones() -> None:
    view = TextView()
    async with Recoloured(view).run_test(size=(40, 12)) as pilot:
        view.set_text([Text("words")])
        await pilot.pause()
        view.add_class("warm")
        await pilot.pause()
        view.set_text([Text("words")])
        first = view.render_line(0)._segments[0]
        assert first.style is not None and first.style.color is not None and first.style.color.triplet == (255, 0, 0)

def test_the_log_cursor_stays_in_the_middle_half_and_the_view_turns_half_a_page() -> None:
    height = 20
    tops = [page_top(row, height) for row in range(500)]
    for row, top in enumerate(tops):
        assert top <= row < top + height
        assert row < height // 4 or height // 4 <= row - top < height // 4 + height // 2
    assert len(set(tops)) == 1 + (499 - height // 4) // (height // 2)


async def test_a_log_of_one_user_grows_with_the_table() -> None:
    """Listed while the log loads batch by batch, one user's events are the same as listed at once."""
    source = ReplaySource(load_trace(TRACES / "heavy-vs-light.parquet"), ReplayConfig("sfq", 4), chunk=500)
    table, log = EventTable("sfq"), EventLog(EventLogHeader())
    options = ViewOptions(user_filter="heavy")
    async with Holder(log).run_test(size=(100, 20)) as pilot:
        batches = 0
        for batch, _ in source.batches():
            table.append(batch)
            batches += 1
            k = len(table) - 1
            log.show(Frame(table, Timeline(table).state_at(k), k, "", 4, 1.0, False, False, 1.0, options=options))
        await pilot.pause()
        heavy = [k for k in range(len(table)) if table.user_name(k) == "heavy"]
        shown = [int(line.split()[0].replace(",", "")) for line in view_text(log).splitlines() if line.strip()]
        assert batches > 3 and shown and shown == heavy[-len(shown):]


def view_text(view: LineView) -> str:
    return "\n".join(view.render_line(y).text.rstrip() for y in range(view.scrollable_content_region.height))
