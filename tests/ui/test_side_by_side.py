"""Runs side by side: lockstep in the app, the divergence line, panes added and dropped, lessons."""

from __future__ import annotations

from pathlib import Path

from sfqtui.core.events import DISPATCH
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.side_by_side.lesson import LessonPanel
from sfqtui.ui.side_by_side.run_pane import PaneHead, QueueOrder, RunPane
from sfqtui.ui.side_by_side.view import DivergenceLine
from tests.dashboard import lesson_dashboard, settle, text_of, until

TRACES = Path(__file__).resolve().parents[2] / "traces"
SIZE = (160, 44)
S_A_S_B = [(3, 0), (3, 1), (3, 2), (3, 3), (6, 3), (6, 4), (6, 5), (6, 6)]  # the article's §2.7 table


def side_by_side(trace: str, *schedulers: str, slots: int = 1, lockstep: str = "dispatch") -> SfqApp:
    openings = [Opening(TRACES / trace, is_log=False, config=ReplayConfig(name, slots), slots_given=True) for name in schedulers]
    return SfqApp(openings, lockstep=lockstep)


def pane(app: SfqApp, run: Run) -> RunPane:
    return app.query_one(f"#pane-{run.key}", RunPane)


def log_rows(pane: RunPane) -> list[int]:
    """The event numbers the pane's log shows on screen."""
    return [int(line.split()[0].replace(",", "")) for line in text_of(pane.events).splitlines() if line.strip()]


def fits(pane: RunPane) -> bool:
    """The pane's meter scale spans its band as drawn now (it is drawn for the width at its last redraw)."""
    scale = next(part for part in pane.band_header.text.splitlines()[1].split() if part.startswith("├"))
    return len(scale) == pane.band.band_layout.fit(pane.band.scrollable_content_region.width)[1]


async def test_every_pane_loads_and_draws_its_log_before_any_key() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4, lockstep="time")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for run in app.runs:
            assert len(run.table) > 3000
            assert pane(app, run).head.text.startswith(f"seq - (last {len(run.table) - 1:,}) start")
            assert log_rows(pane(app, run))[:3] == [0, 1, 2]


async def test_after_a_jump_each_pane_scrolls_its_log_to_its_own_cursor() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4, lockstep="time")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", *"900", "enter")
        sfq, drr = app.runs
        assert drr.cursor.k != sfq.cursor.k  # each pane its own event, so each log its own rows
        for run in app.runs:
            assert run.cursor.k in log_rows(pane(app, run))


async def test_after_a_resize_or_the_help_every_pane_fits_without_a_key() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4, lockstep="time")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", *"900", "enter")
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        for run in app.runs:
            assert fits(pane(app, run)) and run.cursor.k in log_rows(pane(app, run))
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.query("HelpPanel")
        for run in app.runs:
            assert fits(pane(app, run)) and run.cursor.k in log_rows(pane(app, run))


async def test_a_re_run_from_the_palette_redraws_every_pane() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4, lockstep="dispatch")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.reruns.rerun(scheduler="fifo")
        await settle(pilot)
        await pilot.press("n", "n")
        fifo, drr = app.runs
        assert fifo.scheduler == "fifo" and len(app.query(RunPane)) == 2
        assert str(pane(app, fifo).border_title).startswith("fifo") and fifo.cursor.dispatch_number == drr.cursor.dispatch_number == 1
        for run in app.runs:
            assert run.cursor.k in log_rows(pane(app, run))


async def test_the_worked_example_steps_sfq_and_drr_dispatch_by_dispatch() -> None:
    app = side_by_side("seed-example.parquet", "sfq", "drr")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sfq, drr = app.runs
        for step, (s_a, s_b) in enumerate(S_A_S_B):
            await pilot.press("n")
            assert sfq.cursor.dispatch_number == drr.cursor.dispatch_number == step
            assert drr.table.kind[drr.cursor.k] == DISPATCH
            winner = sfq.table.user_name(sfq.cursor.k)
            said = " ".join(app.query_one(f"#pane-{sfq.key}", RunPane).query_one(PaneHead).text.split())
            assert f"{winner} is chosen" in said and f"S_{winner} = {s_a if winner == 'A' else s_b}" in said
            order = app.query_one(f"#pane-{drr.key}", RunPane).query_one(QueueOrder).text
            assert order.startswith("next:") and "Q 3" in order
        for _ in range(8):
            await pilot.press("p")
        assert sfq.cursor.dispatch_number == drr.cursor.dispatch_number == 0


async def test_a_drr_pane_warms_its_shadow_after_loading_so_a_far_jump_re_drives_little() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        sfq, drr = app.runs
        shadow = app.teacher.shadow(drr)
        assert shadow.reach >= len(drr.table) - 1 - shadow.every  # copies over the whole log, though no step went there
        assert app.teacher.shadow(sfq).reach == -1  # SFQ's pane needs no shadow: nothing warmed
        await pilot.press("end")
        order = app.query_one(f"#pane-{drr.key}", RunPane).query_one(QueueOrder).text
        assert order.startswith("next:")  # drawn from the adopted copies


async def test_lockstep_switches_between_time_and_dispatch() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4, lockstep="time")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sfq, drr = app.runs
        await pilot.press("g", *"900", "enter")
        assert drr.table.t[drr.cursor.k] <= sfq.table.t[sfq.cursor.k]
        await pilot.press("l")
        assert app.lockstep == "dispatch" and drr.cursor.dispatch_number == sfq.cursor.dispatch_number
        assert "by dispatch" in app.query_one(DivergenceLine).text


async def test_the_divergence_line_and_the_differing_dispatch() -> None:
    app = side_by_side("heavy-vs-light.parquet", "sfq", "drr", slots=4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sfq, drr = app.runs
        await pilot.press("n")
        assert "same order as sfq so far" in app.query_one(DivergenceLine).text
        for _ in range(15):
            await pilot.press("n")
        line = app.query_one(DivergenceLine).text
        assert "orders first differ at dispatch #16" in line and "1 of 16 positions differ" in line
        assert sfq.table.req[sfq.cursor.k] != drr.table.req[drr.cursor.k]


async def test_panes_are_added_and_dropped_from_the_palette() -> None:
    app = side_by_side("seed-example.parquet", "sfq")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.side_by_side
        await app.reruns.compare_with("drr")
        await settle(pilot)
        assert [run.scheduler for run in app.runs] == ["sfq", "drr"] and len(app.query(RunPane)) == 2
        await pilot.press("n", "n")
        assert app.runs[1].cursor.dispatch_number in (0, 1)
        await app.reruns.drop_pane(app.runs[1].key)
        await pilot.pause()
        assert len(app.runs) == 1 and not app.query(RunPane)
        await pilot.press("n")
        # the article's order is A B B B A B B B: the third dispatch is B's, explained in the one pane left
        assert app.cursor.dispatch_number == 2 and "Dispatch B" in app.query_one(ExplainPanel).text  # numbered from 0


def dispatches_only(log_text: str) -> bool:
    kinds = [line.split()[2] for line in log_text.splitlines() if line.strip()]
    return bool(kinds) and set(kinds) == {"dispatch"}


async def test_view_options_are_the_apps_and_outlive_panes_added_and_dropped() -> None:
    app = side_by_side("seed-example.parquet", "sfq")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("o", "d", "n")
        await app.reruns.compare_with("drr")
        await settle(pilot)
        await pilot.press("n")
        for run in app.runs:  # the new pane and the leader's new one alike
            assert "by name" in pane(app, run).band_header.text and dispatches_only(text_of(pane(app, run).events))
        await pilot.press("o")
        assert all("by share" in pane(app, run).band_header.text for run in app.runs)
        await app.reruns.drop_pane(app.runs[1].key)
        await pilot.pause()
        assert "by share" in text_of(app.query_one("#band-header")) and dispatches_only(text_of(app.query_one("#log")))
        assert app.query_one("#log-box").border_title == "event log: dispatches"


async def test_a_lesson_introduces_itself_and_ends_with_its_measured_outcome(tmp_path: Path) -> None:
    app = lesson_dashboard(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(LessonPanel)
        assert "A B B B A B B B" in panel.text
        await until(pilot, lambda: panel.outcome is not None, "the lesson's measured outcome")
        await pilot.press("end")
        assert "outcome, measured" in panel.text and "sfq: shares" in panel.text and "drr:" in panel.text


async def test_a_lesson_steps_its_panes_through_the_same_moments_at_t_0(tmp_path: Path) -> None:
    """§2.7: every request arrives at t = 0; by dispatch or by time, both panes show the same arrival."""
    app = lesson_dashboard(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sfq, drr = app.runs
        await pilot.press("right", "right", "right")
        assert sfq.cursor.k == drr.cursor.k == 2 and sfq.table.t[2] == 0.0
        assert "lockstep by dispatch (the n-th dispatch of each" in app.query_one(DivergenceLine).text
        await pilot.press("l", "right")
        assert sfq.cursor.k == drr.cursor.k == 3
        assert "lockstep by time (same t, as many dispatches at it" in app.query_one(DivergenceLine).text
        for run in app.runs:
            assert pane(app, run).head.text.startswith("seq 3 (last ")


async def test_a_drr_log_the_shadow_cannot_follow_still_steps() -> None:
    """DRR priced by the estimator: a head priced at a visit may cost otherwise at its
    dispatch, so the shadow cannot follow; the pane narrates from the log alone."""
    app = side_by_side("calibration.parquet", "sfq", "drr", slots=8)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        drr = app.runs[1]
        for _ in range(30):
            await pilot.press("n")
        await pilot.press("end", "p", "home", "n")
        assert "drr with these settings picks" in app.teacher.unfollowable[drr.key]
        assert app.query_one(f"#pane-{drr.key}", RunPane).query_one(PaneHead).text


async def test_warming_finds_a_log_the_shadow_cannot_follow_before_any_step() -> None:
    app = side_by_side("calibration.parquet", "sfq", "drr", slots=8)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        drr = app.runs[1]
        assert drr.cursor.k <= 0
        assert "drr with these settings picks" in app.teacher.unfollowable[drr.key]


async def test_a_lessons_outcome_shows_whole_and_a_step_back_brings_back_the_introductions_box(tmp_path: Path) -> None:
    """The outcome ends with the commands that print the same figures: the panel grows to show
    every line of it, not a scroll bar over the last; stepping back shows the introduction in its box again."""
    app = lesson_dashboard(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(LessonPanel)
        box = panel.outer_size.height
        await until(pilot, lambda: panel.outcome is not None, "the lesson's measured outcome")
        await pilot.press("end")
        await pilot.pause()
        lines = panel.text.splitlines()
        assert lines[-1].startswith("the same figures: sfqtui gen") and len(lines) > box - 2
        assert panel.content_region.height == len(lines) and panel.max_scroll_y == 0
        await pilot.press("left")
        await pilot.pause()
        assert "A B B B A B B B" in panel.text and panel.outer_size.height == box
