"""Issue 15 §7: the mouse (a click on a row goes there, a click on a user filters by that
user), `/` search with N / P, and exports of what is on screen from the palette."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.meter_band import MeterBand
from sfqtui.ui.panes.shares import SharesPanel
from tests.dashboard import SIZE, TRACES, dashboard, notifications, settle, text_of, until


def said(app: SfqApp) -> list[str]:
    return [n.message for n in notifications(app)]


async def palette(pilot: Pilot, title: str) -> None:
    """Run the palette's command of that title (as choosing it does: typing it is slow)."""
    app = pilot.app
    command = next(c for c in app.get_system_commands(app.screen) if c.title == title)
    command.callback()
    await pilot.pause()


async def answer(pilot: Pilot, text: str) -> None:
    """Put ``text`` in the prompt (instead of what it offers) and submit it."""
    pilot.app.screen.query_one(Input).value = text
    await pilot.press("enter")
    await pilot.pause()


# The mouse


async def test_a_click_on_a_row_moves_the_cursor_to_its_event() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n", "n", "n")
        log = app.query_one(EventLog)
        top = int(log.scroll_offset.y)
        await pilot.click(log, offset=(2, 5))
        assert app.cursor.k == top + 5
        await pilot.press("d")  # dispatches only: a row is the dispatch of that number
        await pilot.click(log, offset=(2, 1))
        assert app.cursor.k == app.table.dispatches[int(log.scroll_offset.y) + 1]
        assert "Dispatch" in app.query_one(ExplainPanel).text


async def test_a_click_past_the_last_row_does_nothing() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f", "ctrl+u", *"A", "enter", "d")  # A's 2 dispatches: the rest of the view is empty
        k = app.cursor.k
        await pilot.click(app.query_one(EventLog), offset=(2, 6))
        assert app.cursor.k == k


async def test_clicking_a_user_filters_the_log_and_clicking_again_shows_everyone() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n", "n")
        log, band = app.query_one(EventLog), app.query_one(MeterBand)
        first = text_of(band).splitlines()[0].split()[0]
        await pilot.click(band, offset=(1, 0))
        assert app.options.user_filter == first
        assert all(f" {first} " in line for line in text_of(log).splitlines() if line.strip())
        assert f"of {first}" in str(app.query_one("#log-box").border_title)
        await pilot.click(band, offset=(1, 0))
        assert app.options.user_filter is None
        # the shares table (in its border): its first row under the header
        shares = app.query_one(SharesPanel)
        top = text_of(shares).splitlines()[2].strip("│").split()[0]
        await pilot.click(shares, offset=(2, 2))
        assert app.options.user_filter == top
        await pilot.click(shares, offset=(2, 1))  # the header: nothing
        assert app.options.user_filter == top
        # a name in the log: the user cell of a row (and the cursor goes to that row)
        await pilot.click(shares, offset=(2, 2))
        row = text_of(log).splitlines()[2]
        name = row.split()[3]
        await pilot.click(log, offset=(row.index(f" {name} ") + 1, 2))
        assert app.options.user_filter == name and app.table.user_name(app.cursor.k) == name
        await pilot.click(log, offset=(2, 0))  # elsewhere on a row: only the cursor moves
        assert app.options.user_filter == name


async def test_a_click_in_a_following_pane_puts_every_pane_at_that_moment() -> None:
    openings = [Opening(TRACES / "heavy-vs-light.parquet", is_log=False, config=ReplayConfig(s, 4), slots_given=True) for s in ("sfq", "drr")]
    app = SfqApp(openings, lockstep="dispatch")
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: not app.loading, "both panes to load")
        await pilot.press(*["n"] * 10)
        follower = app.query_one(f"#pane-{app.runs[1].key} EventLog", EventLog)
        rows = text_of(follower).splitlines()
        y = next(i for i, line in enumerate(rows) if " dispatch " in line and i > 2)
        clicked = int(follower.scroll_offset.y) + y
        await pilot.click(follower, offset=(2, y))
        drr = app.runs[1]
        assert drr.cursor.k == clicked
        assert app.cursor.dispatch_number == drr.cursor.dispatch_number  # the leader is at the same dispatch


# Search


async def test_slash_finds_a_request_and_n_and_p_step_through_its_events() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"r000012", "enter")
        life = app.table.request_life("r000012")
        assert app.cursor.k == life["arrive"]
        subtitle = str(app.query_one("#log-box").border_subtitle)
        assert "match 1 of 3" in subtitle and "N next" in subtitle
        await pilot.press("N")
        assert app.cursor.k == life["dispatch"]
        await pilot.press("N")
        assert app.cursor.k == life["complete"]
        await pilot.press("N")  # round the end, and says so
        assert app.cursor.k == life["arrive"] and "from the start" in str(app.query_one("#log-box").border_subtitle)
        await pilot.press("P")
        assert app.cursor.k == life["complete"]
        # n and p still step dispatches
        await pilot.press("p")
        assert app.cursor.k == app.table.previous_dispatch(life["complete"])


async def test_search_matches_users_and_parts_of_ids_ignoring_case_and_marks_them() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"b", "enter")  # user B (the ids hold no b)
        assert app.table.user_name(app.cursor.k) == "B"
        found = app.log_keys.search.matches(app.table, None)
        assert list(found) == [k for k in range(len(app.table)) if app.table.user_name(k) == "B"]
        log = app.query_one(EventLog)
        row = log.render_line(app.cursor.k - int(log.scroll_offset.y))
        assert any(seg.style is not None and seg.style.bgcolor is not None and seg.text == "B" for seg in row)
        await pilot.press("slash", "ctrl+u", *"00001", "enter")  # r000010 .. r000016 and r000001
        ids = {app.table.request_id(int(k)) for k in app.log_keys.search.matches(app.table, None)}
        assert ids == {"r000001", *(f"r00001{d}" for d in range(7))}


async def test_search_keeps_to_the_rows_listed_and_says_when_nothing_matches() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d", "slash", *"r000012", "enter")  # dispatches only: just its dispatch
        assert app.cursor.k == app.table.request_life("r000012")["dispatch"]
        assert "match 1 of 1" in str(app.query_one("#log-box").border_subtitle)
        k = app.cursor.k
        await pilot.press("slash", "ctrl+u", *"nobody", "enter")
        assert app.cursor.k == k
        assert any("contains 'nobody'" in m for m in said(app))
        await pilot.press("slash", "ctrl+u", "enter")  # an empty search: no marks, the mouse hint again
        assert app.query_one(EventLog).search_text == "" and "click" in str(app.query_one("#log-box").border_subtitle)
        await pilot.press("N")
        assert any("no search yet" in m for m in said(app))


# Export


async def test_the_filtered_log_exports_to_csv_and_parquet_as_listed(tmp_path: Path) -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d", "f", "ctrl+u", *"B", "enter")
        await palette(pilot, "Export the event log (CSV)")
        await answer(pilot, str(tmp_path / "b-dispatches"))
        await app.workers.wait_for_complete()
        await pilot.press("end")
        await palette(pilot, "Export the event log (Parquet)")
        await answer(pilot, str(tmp_path / "b.parquet"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        listed = app.query_one(EventLog).listed
        assert listed is not None
    csv = pl.read_csv(tmp_path / "b-dispatches.csv")
    parquet = pl.read_parquet(tmp_path / "b.parquet")
    assert csv.columns == parquet.columns == ["seq", "t", "kind", "user", "cost", "v", "meter", "request_id"]
    assert csv.height == parquet.height == len(listed) == 12
    assert set(parquet["user"]) == {"B"} and set(parquet["kind"]) == {"dispatch"}
    assert parquet["seq"].to_list() == list(listed)
    assert parquet["request_id"].to_list() == [app.table.request_id(k) for k in listed]
    assert parquet["meter"].to_list() == [app.table.value[k] for k in listed]
    assert not list(tmp_path.glob("*.part"))
    assert any(str(tmp_path / "b.parquet") in m and "12 rows" in m for m in said(app))


async def test_the_shares_table_and_a_screenshot_export_and_say_where(tmp_path: Path) -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await palette(pilot, "Export the shares table (CSV)")
        await answer(pilot, str(tmp_path / "shares.csv"))
        await app.workers.wait_for_complete()
        await palette(pilot, "Save a screenshot (SVG)")
        await answer(pilot, str(tmp_path / "screen"))
        await pilot.pause()
    shares = pl.read_csv(tmp_path / "shares.csv")
    assert shares["user"].to_list() == ["A", "B"] and shares["charged"].to_list() == [12.0, 12.0]
    assert shares["run_share"].to_list() == [0.5, 0.5]
    svg = tmp_path / "screen.svg"
    assert svg.exists() and "sfqtui" in svg.read_text()
    assert any(str(svg) in m for m in said(app))


@pytest.mark.parametrize("where, why", [("/no/such/dir/x.csv", "the folder /no/such/dir does not exist"), (".", "is a directory")])
async def test_a_bad_export_path_is_refused_before_any_work(tmp_path: Path, where: str, why: str) -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await palette(pilot, "Export the event log (CSV)")
        await answer(pilot, where if where != "." else str(tmp_path))
        assert not [w for w in app.workers if w.group == "export"]
        assert any(why in m for m in said(app))
    assert not list(tmp_path.iterdir())
