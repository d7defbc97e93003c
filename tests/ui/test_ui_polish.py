"""Issue 21 §4 on the dashboard: the filter and search prompts alike (Enter on an empty one
clears), prompts that wrap instead of cutting their question, the key bar after a pane is
added, `l` with one pane, the why panel's completion per scheduler, and one clear status
line while an earlier proxy run is shown."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Footer, Input, Label

from sfqtui.attach.stream import LIVE, Status
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.stream.connection import Link, connection_part
from tests.dashboard import dashboard, notifications, settle, text_of

SIZE = (160, 40)


def keys_shown(app: SfqApp) -> set[str]:
    """The descriptions of the keys in the key bar at the bottom."""
    return {str(getattr(key, "description", "")) for key in app.query_one(Footer).query("FooterKey")}


def toasts(app: SfqApp) -> list[str]:
    return [str(n.message) for n in notifications(app)]


async def test_enter_on_an_empty_filter_prompt_shows_everyone_and_it_opens_empty() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")  # the cursor on a dispatch: a user at the cursor
        await pilot.press("f")
        prompt = app.screen.query_one(Input)
        assert prompt.value == "" and "now: everyone" in prompt.placeholder
        await pilot.press("enter")
        assert app.options.user_filter is None  # not the user at the cursor
        await pilot.press("f", *"A", "enter")
        assert app.options.user_filter == "A"
        await pilot.press("f")
        assert app.screen.query_one(Input).value == "" and "now: A" in app.screen.query_one(Input).placeholder
        await pilot.press("enter")
        assert app.options.user_filter is None


async def test_enter_on_an_empty_search_prompt_ends_the_search() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"A", "enter")
        assert app.log_keys.search.text == "A"
        await pilot.press("slash")
        assert app.screen.query_one(Input).value == "" and "now: A" in app.screen.query_one(Input).placeholder
        await pilot.press("enter")
        assert app.log_keys.search.text == ""


async def test_a_prompt_wraps_its_question_instead_of_cutting_it() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        label = app.screen.query_one(Label)
        box = label.parent
        assert isinstance(box, Widget) and box.content_region.contains_region(label.region)  # all of it on screen
        question = " ".join(text_of(label).split())
        assert question == "Go to an event number (1234), a time (12.5s or t=12.5) or a request id:"


async def test_the_key_bar_keeps_its_keys_after_a_pane_is_added() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert {"Quit", "Search"} <= keys_shown(app)
        await app.reruns.compare_with("drr")
        await settle(pilot)
        await pilot.pause()
        assert {"Quit", "Search"} <= keys_shown(app)


async def test_lockstep_with_one_pane_says_there_is_nothing_to_pair() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.lockstep
        await pilot.press("l")
        assert app.lockstep == before
        assert any("one pane: nothing to step in lockstep with" in toast for toast in toasts(app))
        assert not any(toast.startswith("lockstep by") for toast in toasts(app))


async def test_a_completion_under_drr_speaks_of_deficits_not_meters() -> None:
    app = dashboard(scheduler="drr")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.table
        k = next(k for k in range(len(table)) if table.kind_name(k) == "complete")
        app.cursor.goto(str(table.first_seq + k))
        app.refresh_views()
        await pilot.pause()
        said = " ".join(app.query_one(ExplainPanel).text.split())
        assert "completes; no deficit (DC_i) changes: drr charges at dispatch only (§4)" in said
        assert "meters do not change" not in said


def test_an_earlier_proxy_run_shown_reads_as_one_line() -> None:
    viewing = Link(Status(LIVE, url="http://127.0.0.1:8000"), 1_764_581_445.0, "proxy run 1 of 2, ended by 18:17:32")
    text, _style = connection_part(viewing, 0.0)
    assert text == "● live 127.0.0.1:8000"  # which run is shown, and when it ended, is said once, before
    following = Link(Status(LIVE, url="http://127.0.0.1:8000"), 1_764_581_445.0)
    assert "new proxy run since" in connection_part(following, 0.0)[0]
