"""Issue 15 §5 on the dashboard: what it says is right and complete. `x` names the rule it
stops at; `?` lists the app's own keys, grouped; DRR's why panel labels every number of
a visit; a VTC band charts what its header says; the time-bin chart starts empty; `f`
with an unknown user says so; the calibration view says what a live stream tells."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.pilot import Pilot

from sfqtui.core.analysis.explain import explain_dispatch
from sfqtui.core.analysis.log_calibration import calibrate_log
from sfqtui.core.log.shadow import Shadow
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.meter_band import MeterBand, MeterHeader
from sfqtui.ui.panes.shares import SharesPanel
from sfqtui.ui.screens.calibration_view import CalibrationScreen, CalibrationText
from sfqtui.ui.screens.help import GROUPS, KeysTable, key_groups
from tests.dashboard import SIZE, TRACES, Panes, dashboard, frame_of, lesson_dashboard, notifications, seen, settle, text_of, until
from tests.proxy_fixtures import ask, running_proxy, state


def notes(app: SfqApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in notifications(app)]


# x names the rule


async def test_x_names_the_rule_it_stops_at_and_the_why_panel_shows_it(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    simulate(load_trace(TRACES / "trickle.parquet"), ReplayConfig("sfq-reset", 1), log)
    app = dashboard(log, is_log=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")
        k = app.cursor.k
        assert k == app.cursor.violations[0]
        said = [n for n in notes(app) if "breaks" in n]
        assert said and said[-1].startswith(f"seq {k:,} breaks §3.2/§3.3: ")
        assert "gained 35,100" in said[-1] and "2 c_max = 800" in said[-1]
        why = " ".join(app.query_one(ExplainPanel).text.split())
        assert why.startswith("✗ breaks §3.2/§3.3 trickle gained 35,100 over backlogged")
        await pilot.press("right")
        assert "breaks" not in app.query_one(ExplainPanel).text


# ? lists the app's keys


async def test_the_help_lists_every_key_of_the_app_grouped_and_no_scroll_keys_over_them() -> None:
    app = dashboard()
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        groups = key_groups(app, app.focused)
        assert list(groups)[: len(GROUPS)] == [title for title, _ in GROUPS] and "Other" not in groups
        listed = {description.plain: keys for rows in groups.values() for keys, description in rows}
        assert listed["Step"] == "→" and listed["Back"] == "←" and listed["Start"] == "home" and listed["End"] == "end"
        for binding in app.BINDINGS:
            assert isinstance(binding, Binding)
            if app.check_action(binding.action, ()):  # escape (back to the lessons) is a lesson's key only
                assert binding.description in listed, binding
        shown = text_of(app.screen.query_one(KeysTable))
        assert "Scroll Left" not in shown and "Scroll Home" not in shown and "Next match" in shown and "click a row" in shown
        assert "Scroll Right" not in text_of(app.screen.query_one("Footer"))


async def test_in_a_lesson_the_help_lists_escape_back_to_the_lessons(tmp_path: Path) -> None:
    app = lesson_dashboard(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        groups = key_groups(app, app.focused)
        assert ("esc", "Lessons") in [(keys, description.plain) for keys, description in groups["App"]]


def test_the_help_panel(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark", "n")  # a step after: the panes fit the narrower screen
        await pilot.pause()

    assert snap_compare(dashboard(), terminal_size=(140, 52), run_before=run_before)


async def test_right_steps_even_when_a_narrow_log_that_scrolls_sideways_has_the_focus() -> None:
    openings = [Opening(TRACES / "seed-example.parquet", is_log=False, config=ReplayConfig(s, 1), slots_given=True) for s in ("sfq", "drr")]
    app = SfqApp(openings, lockstep="dispatch")
    async with app.run_test(size=(56, 44)) as pilot:  # too narrow even for the columns that never give way
        await settle(pilot)
        log = app.query(EventLog).last()
        assert log.virtual_size.width > log.scrollable_content_region.width  # it could scroll sideways
        log.focus()
        await pilot.press("right", "right")
        assert app.cursor.k == 1 and log.scroll_offset.x == 0


# DRR: every number of a visit, labelled


def drr_run() -> Run:
    return Run(Opening(TRACES / "heavy-vs-light.parquet", is_log=False, config=ReplayConfig("drr"))).load_all()


def test_a_drr_dispatch_tells_the_deficit_before_the_quantum_the_credit_the_charge_and_after() -> None:
    run = drr_run()
    table, shadow = run.table, Shadow(run.table, run.metadata["quantum"])
    quantum = run.metadata["quantum"]
    seen_kinds = set()
    for k in table.dispatches[:200]:
        e = explain_dispatch(table, run.timeline, k, shadow=shadow)
        assert e is not None and e.visit is not None
        v = e.visit
        assert v.credit == v.before + v.quantum and v.quantum == v.visits * quantum  # every user weighs 1 here
        assert v.charge == table.cost_at(k) <= v.credit
        assert v.after == (0.0 if v.emptied else v.credit - v.charge) == table.value[k]
        seen_kinds.add(("fresh" if v.visits else "goes on", "emptied" if v.emptied else "left"))
        assert e.candidates[0].user == (e.user if not v.ended else v.ended[0][0])  # visiting order
    assert {("fresh", "left"), ("goes on", "left")} <= seen_kinds


async def test_the_drr_why_panel_labels_each_number() -> None:
    """The why panel drawn from the frame the dashboard draws after `g 200 enter n`, then `g 100 enter nnnn`."""
    run = drr_run()
    shadow = Shadow(run.table, run.metadata["quantum"])  # the dashboard's why panel follows DRR with one (SfqApp._explain)
    async with Panes().run_test(size=SIZE) as pilot:
        panel = pilot.app.query_one(ExplainPanel)

        async def why_after(goto: str, dispatches: int) -> str:
            assert run.cursor.goto(goto) is not None
            for _ in range(dispatches):
                run.cursor.next_dispatch()
            panel.show(frame_of(run), run.timeline, shadow)
            await pilot.pause()
            return " ".join(panel.text.split())

        why = await why_after("200", 1)
        assert "deficit before" in why
        assert "deficit of light-0: before 600 · + 0 (no new quantum) · = credit 600 · − charge 100 · = after 500" in why
        why = await why_after("100", 4)
        assert "first heavy's head (1,000) > its deficit 0: the visit ends" in why
        assert "before 0 · + quantum 1,000 · = credit 1,000 · − charge 100 · = after 900" in why


# VTC: the band charts counters, as its header says


async def test_a_vtc_band_places_counters_above_the_lowest_waiting_one() -> None:
    """The band and its header drawn from the frame the dashboard draws after `g 200 enter n`."""
    run = Run(Opening(TRACES / "calibration.parquet", is_log=False, config=ReplayConfig("vtc"))).load_all()
    assert run.cursor.goto("200") is not None and run.cursor.next_dispatch() is not None
    frame = frame_of(run)
    async with Panes().run_test(size=SIZE) as pilot:
        band, head = pilot.app.query_one(MeterBand), pilot.app.query_one(MeterHeader)
        band.show(frame)
        head.show(frame, band.band_layout)
        await pilot.pause()
        header = text_of(head).splitlines()[0]
        assert "min C" in header and "min C+c_max" in header and "most queued" not in header
        s = frame.state
        lowest = min(s.value[u] for u in s.backlogged())
        marks = {}
        for line in filter(str.strip, text_of(band).splitlines()):
            name = line.split()[0]
            at = next(i for i, ch in enumerate(line[15:]) if ch in "●○◂▸")
            marks[name] = (at, s.value[run.table.user_code[name]])
        assert min(marks.values(), key=lambda m: m[1])[0] == 0 and min(m[1] for m in marks.values()) == lowest
        by_counter = sorted(marks.values(), key=lambda m: m[1])
        assert [m[0] for m in by_counter] == sorted(m[0] for m in by_counter)


# The time-bin chart starts empty


async def test_the_time_bin_chart_draws_nothing_before_the_first_dispatch() -> None:
    app = dashboard()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        chart = lambda: text_of(app.query_one(SharesPanel)).splitlines()[9:14]  # noqa: E731
        assert not any(set(line.strip("│ ")) & set("▁▂▃▄▅▆▇█") for line in chart())
        await pilot.press("right")  # an arrival at t = 0: still nothing dispatched
        assert not any(set(line.strip("│ ")) & set("▁▂▃▄▅▆▇█") for line in chart())
        await pilot.press("n")  # A's first dispatch: its bin only, A at 100 %
        bars = [line.strip("│ ") for line in chart() if set(line.strip("│ ")) & set("▁▂▃▄▅▆▇█")]
        assert bars == ["█", "▁"]


# f with a user who is not in the log


async def test_filtering_by_an_unknown_user_keeps_the_filter_and_offers_the_closest() -> None:
    app = dashboard("demo.parquet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(EventLog)
        await pilot.press("f", "ctrl+u", *"erin", "enter")
        assert app.options.user_filter == "erin"
        await pilot.press("f", "ctrl+u", *"dave", "enter")
        assert app.options.user_filter == "erin" and text_of(log).strip()
        assert any("no user 'dave' in this log; did you mean dave-batch?" in n and "still shows all events of erin" in n for n in notes(app))
        await pilot.press("f", "ctrl+u", *"Alicia", "enter")
        assert app.options.user_filter == "erin" and any("did you mean alice?" in n for n in notes(app))


# The calibration view on a live stream


def test_a_log_without_estimator_settings_is_measured_in_output_tokens() -> None:
    run = Run(Opening(TRACES / "calibration.parquet", is_log=False, config=ReplayConfig("sfq"))).load_all()
    m = calibrate_log(run.table, {})
    assert m.unit == "output tokens" and m.ratio_scope == "unknown" and [s.key for s in m.ratios] == ["all users"]
    by_user = {u.user: u for u in m.users}
    for name, u in by_user.items():
        code = run.table.user_code[name]
        mine = [n for n, k in enumerate(run.table.dispatches) if run.table.user[k] == code]
        assert u.charged == pytest.approx(sum(run.table.est_output[n] for n in mine))
        assert u.actual == pytest.approx(sum(run.table.output[run.table.req[run.table.dispatches[n]]] for n in mine))
    assert by_user["padder"].bias > 2 > 1 > by_user["honest"].bias  # type: ignore[operator]


async def test_the_calibration_view_on_a_live_stream_says_what_the_stream_tells(fake: tuple[object, str], keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        app = SfqApp(LiveOpening(px.url))
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            ask(px.url, 3, user="bob")
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the app to catch up")
            await pilot.press("c")
            screen = app.screen
            assert isinstance(screen, CalibrationScreen)

            def text() -> str:
                return " ".join(screen.query_one(CalibrationText).text.split())

            await until(pilot, lambda: "bob" in text(), "the measures")
            assert "unknown" not in text() and "still loading" not in text()
            assert "settings not recorded (a live stream does not send them)" in text()
            assert "estimated vs actual output tokens per user" in text() and "more as the stream goes on" in text()
            assert "3 dispatches" in text()
            ask(px.url, 2, user="carol")
            await until(pilot, lambda: "carol" in text() and "5 dispatches" in text(), "the measures to grow with the stream", timeout=20)
