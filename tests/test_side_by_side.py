"""Runs side by side: lockstep in the app, the divergence line, panes added and dropped, lessons."""

from __future__ import annotations

from pathlib import Path

from dashboard import settle, until
from sfqtui.core.engine.events import DISPATCH
from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import SfqApp
from sfqtui.ui.explain_panel import ExplainPanel
from sfqtui.ui.lesson import LessonPanel
from sfqtui.ui.run_pane import PaneHead, QueueOrder, RunPane
from sfqtui.ui.side_by_side import DivergenceLine

TRACES = Path(__file__).resolve().parents[1] / "traces"
SIZE = (160, 44)
S_A_S_B = [(3, 0), (3, 1), (3, 2), (3, 3), (6, 3), (6, 4), (6, 5), (6, 6)]  # the article's §2.7 table


def side_by_side(trace: str, *schedulers: str, slots: int = 1, lockstep: str = "dispatch") -> SfqApp:
    openings = [Opening(TRACES / trace, is_log=False, config=ReplayConfig(name, slots), slots_given=True) for name in schedulers]
    return SfqApp(openings, lockstep=lockstep)


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
        await app.compare_with("drr")
        await settle(pilot)
        assert [run.scheduler for run in app.runs] == ["sfq", "drr"] and len(app.query(RunPane)) == 2
        await pilot.press("n", "n")
        assert app.runs[1].cursor.dispatch_number in (0, 1)
        await app.drop_pane(app.runs[1].key)
        await pilot.pause()
        assert len(app.runs) == 1 and not app.query(RunPane)
        await pilot.press("n")
        # the article's order is A B B B A B B B: the third dispatch is B's, explained in the one pane left
        assert app.cursor.dispatch_number == 2 and "Dispatch B" in app.query_one(ExplainPanel).text  # numbered from 0


async def test_a_lesson_introduces_itself_and_ends_with_its_measured_outcome(tmp_path: Path) -> None:
    lesson = LESSONS["worked-example"]
    trace = tmp_path / "lesson.parquet"
    lesson.write(trace)
    openings = [Opening(trace, is_log=False, config=lesson.config(name), slots_given=True) for name in lesson.schedulers]
    app = SfqApp(openings, lockstep=lesson.lockstep, lesson=lesson)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(LessonPanel)
        assert "A B B B A B B B" in panel.text
        await until(pilot, lambda: panel.outcome is not None, "the lesson's measured outcome")
        await pilot.press("end")
        assert "outcome, measured" in panel.text and "sfq: shares" in panel.text and "drr:" in panel.text


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
