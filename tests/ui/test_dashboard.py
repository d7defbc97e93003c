"""Pilot tests: every control of the replay dashboard, on small bundled traces."""

from pathlib import Path

import polars as pl
import pytest
from textual.message import Message

from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import Timeline
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from sfqtui.trace.sources import ReplaySource
from sfqtui.ui.app import SfqApp
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.meter_band import MeterBand, MeterHeader
from sfqtui.ui.panes.status_line import StatusLine
from tests.dashboard import SIZE, TRACES, Panes, dashboard, notifications, run_command, screen_text, settle, text_of, until


async def test_loading_posts_opened_then_batches_then_finished_then_analysed() -> None:
    seen: list[str] = []

    class Recording(SfqApp):
        async def _on_message(self, message: Message) -> None:
            name = type(message).__name__
            if name in ("Opened", "EventsLoaded", "LoadFinished", "Analysed", "LoadFailed"):
                seen.append(name)
            await super()._on_message(message)

    app = Recording(dashboard().opening)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert seen[0] == "Opened"
    assert seen[1:-2] == ["EventsLoaded"] * (len(seen) - 3) and len(seen) >= 4
    assert seen[-2:] == ["LoadFinished", "Analysed"]


async def test_a_bad_file_is_reported_not_raised(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"request_id": ["a"], "user": ["u"], "arrival_s": [-1.0], "cost": [1.0]}).write_parquet(bad)
    app = dashboard(bad)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, analysed=False)
        assert not app.loading and len(app.table) == 0
        assert any("arrival_s must be >= 0" in n.message for n in notifications(app))


async def test_step_forward_and_back() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right", "right", "right")
        assert app.cursor.k == 2
        await pilot.press("left")
        assert app.cursor.k == 1
        assert "seq 1 (last 48)" in text_of(app.query_one(StatusLine))


async def test_next_and_previous_dispatch_and_home_end() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        first = app.cursor.k
        assert app.table.kind_name(first) == "dispatch"
        await pilot.press("n")
        assert app.table.kind_name(app.cursor.k) == "dispatch" and app.cursor.k > first
        await pilot.press("p")
        assert app.cursor.k == first
        await pilot.press("end")
        assert app.cursor.k == len(app.table) - 1
        await pilot.press("home")
        assert app.cursor.k == -1


async def test_play_pause_and_speed() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("plus", "plus")
        assert app.player.speed == 50.0
        await pilot.press("minus")
        assert app.player.speed == 20.0
        await pilot.press("space")
        assert app.player.playing
        await pilot.pause(0.4)
        await pilot.press("space")
        moved = app.cursor.k
        assert not app.player.playing and moved > 0
        await pilot.pause(0.2)
        assert app.cursor.k == moved


async def test_playing_stops_at_the_end() -> None:
    app = dashboard()
    app.player.speed = 10000.0
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("space")
        await until(pilot, lambda: not app.player.playing, "the player to stop")
        assert app.cursor.k == len(app.table) - 1


@pytest.mark.parametrize("answer,expected", [("20", 20), ("t=6", None), ("r000005", "dispatch")])
async def test_go_to(answer: str, expected: object) -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.press(*answer, "enter")
        if expected == "dispatch":
            assert app.table.request_id(app.cursor.k) == answer and app.table.kind_name(app.cursor.k) == "dispatch"
        elif expected is None:
            assert app.cursor.k == app.table.at_time(6.0)
        else:
            assert app.cursor.k == expected


async def test_go_to_nothing_says_so() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", *"nope", "enter")
        assert app.cursor.k == -1
        assert any("nothing matches" in n.message for n in notifications(app))


async def test_run_until_a_users_next_dispatch() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n", "u")
        await pilot.press(*"A", "enter")
        assert app.table.user_name(app.cursor.k) == "A" and app.cursor.k == app.table.dispatches[4]


async def test_next_idle_reset() -> None:
    app = dashboard("global-idle.parquet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        assert app.table.kind_name(app.cursor.k) == "idle_reset"
        assert "Nobody is waiting" in app.query_one(ExplainPanel).text


async def test_next_invariant_violation(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    simulate(load_trace(TRACES / "trickle.parquet"), ReplayConfig("sfq-reset", 1), log)
    app = dashboard(log, is_log=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.cursor.violations
        await pilot.press("x")
        assert app.cursor.k == app.cursor.violations[0]


async def test_dispatches_only_and_user_filter() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(EventLog)
        await pilot.press("d")
        assert app.options.dispatches_only and "dispatch" in text_of(log) and "arrive" not in text_of(log)
        await pilot.press("f", *"A", "enter")
        assert app.options.user_filter == "A" and app.query_one("#log-box").border_title == "event log: dispatches of A"
        assert all(" A " in line for line in text_of(log).splitlines() if line.strip())
        await pilot.press("f")
        await pilot.press(*["backspace"] * 3, "enter")
        assert app.options.user_filter is None


async def test_sort_and_fold() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        band = app.query_one(MeterBand)
        await pilot.press("n", "n")
        assert text_of(band).splitlines()[0].startswith("B")  # smallest meter first
        await pilot.press("o")
        assert app.options.sort == "name" and text_of(band).splitlines()[0].startswith("A")
        await pilot.press("o", "o", "a")
        assert app.options.sort == "meter" and app.options.show_folded


async def test_help_opens_and_closes() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert app.screen.query("HelpPanel")
        await pilot.press("question_mark")
        assert not app.screen.query("HelpPanel")


async def test_palette_reruns_with_another_scheduler() -> None:
    app = dashboard("heavy-vs-light.parquet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Step", "Next dispatch", "Go to", "Re-run with scheduler drr", "Re-run with 8 slots", "Re-run with the output ratio learned per user"):
            assert wanted in titles
        await run_command(pilot, "Re-run with scheduler drr")
        await settle(pilot)
        assert app.table.scheduler == "drr"
        assert isinstance(app.opening, Opening) and app.opening.config.scheduler == "drr"
        await pilot.press("g", *"100", "enter", "n")
        explained = app.query_one(ExplainPanel).text
        assert "DRR visit" in explained and "deficit" in explained


async def test_forward_then_back_gives_the_same_screen() -> None:
    app = dashboard("demo.parquet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(40):
            await pilot.press("right")
        await pilot.pause()
        before = screen_text(app)
        for _ in range(25):
            await pilot.press("right")
        for _ in range(25):
            await pilot.press("left")
        await pilot.pause()
        assert screen_text(app) == before


@pytest.fixture(scope="module")
def article_log() -> tuple[EventTable, Timeline, int | None]:
    """The seed example's log as the dashboard loads it, with its timeline and slots."""
    source = ReplaySource(load_trace(TRACES / "seed-example.parquet"), ReplayConfig("sfq"))
    table = EventTable("sfq")
    for batch, _ in source.batches():
        table.append(batch)
    return table, Timeline(table), source.metadata.get("slots")


@pytest.mark.parametrize("step", range(8))
async def test_explain_panel_names_the_winner_at_each_step_of_the_article_table(step: int, article_log: tuple[EventTable, Timeline, int | None]) -> None:
    order = "ABBBABBB"
    v_after = [0, 0, 1, 2, 3, 3, 4, 5]
    meters = [(3, 0), (3, 1), (3, 2), (3, 3), (6, 3), (6, 4), (6, 5), (6, 6)]
    table, timeline, slots = article_log
    k = table.dispatches[step]  # where `n` pressed step + 1 times stands (test_next_and_previous_dispatch_and_home_end)
    frame = Frame(table, timeline.state_at(k), k, "", slots, 1.0, False, False, 1.0)
    async with Panes().run_test(size=SIZE) as pilot:
        band, header, explain = pilot.app.query_one(MeterBand), pilot.app.query_one(MeterHeader), pilot.app.query_one(ExplainPanel)
        band.show(frame)
        header.show(frame, band.band_layout)
        explain.show(frame, timeline)
        await pilot.pause()
        panel = explain.text
        winner = order[step]
        assert f"Dispatch {winner}" in panel
        assert f"v ← S_{winner} = {v_after[step]}" in panel
        s_a, s_b = meters[step]
        assert f"= {s_a if winner == 'A' else s_b}" in panel
        rows = {line.split()[0]: line for line in text_of(band).splitlines() if line.strip()}
        v = v_after[step]  # the band reads each meter as its lead over v, shown once above it
        assert f" +{s_a - v} " in rows["A"] and f" +{s_b - v} " in rows["B"]
        assert f"v = {v}" in text_of(header)
