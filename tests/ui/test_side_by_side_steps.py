"""A side-by-side step draws only what it changes, and the panes show what a fresh draw would."""

from __future__ import annotations

from pathlib import Path

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.side_by_side.run_pane import RunPane
from tests.dashboard import settle, text_of

TRACES = Path(__file__).resolve().parents[2] / "traces"
SIZE = (160, 44)


def side_by_side() -> SfqApp:
    openings = [Opening(TRACES / "heavy-vs-light.parquet", is_log=False, config=ReplayConfig(name, 4), slots_given=True)
                for name in ("sfq", "drr")]
    return SfqApp(openings, lockstep="time")


def drawn(pane: RunPane) -> list[str]:
    return [text_of(view) for view in (pane.head, pane.band_header, pane.band, pane.serving, pane.events_header, pane.events, pane.shares)]


async def test_a_pane_whose_run_stays_put_shows_what_drawing_it_again_shows() -> None:
    app = side_by_side()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        follower = app.runs[1]
        follower_pane = app.query_one(f"#pane-{follower.key}", RunPane)
        stayed = 0
        for _ in range(400):
            before = follower.cursor.k
            app.action_step(1)
            await pilot.pause()
            if follower.cursor.k != before and stayed:
                break
            stayed += follower.cursor.k == before
        assert stayed, "no step left the DRR pane where it was"
        kept = drawn(follower_pane)
        app.refresh()
        follower_pane._shown = None  # as if it had never been drawn
        app.refresh_views()
        await pilot.pause()
        assert drawn(follower_pane) == kept


async def test_after_a_far_seek_each_log_header_names_the_columns_its_rows_have() -> None:
    app = side_by_side()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for target in ("3", str(len(app.table) - 2), "40"):  # seq columns of other widths
            app.cursor.goto(target)
            app.refresh_views()
            await pilot.pause()
            for pane in app.query(RunPane):
                columns = pane.events.columns
                assert columns is not None
                assert text_of(pane.events_header).rstrip() == columns.header.rstrip()
                assert pane.events.virtual_size.width == 0  # the rows fit: no sideways scroll
                assert not pane.events.show_horizontal_scrollbar
