"""The lessons on today's policies open side by side, step, and end with their measured outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from sfqtui.ui.side_by_side.lesson import LessonPanel
from tests.dashboard import SIZE, lesson_dashboard, settle, until


@pytest.mark.parametrize(("lesson", "others"), [("round-robin-tokens", ("sfq", "las")), ("priority-bands", ("sfq",))])
async def test_a_policy_lesson_steps_and_ends_with_its_outcome(lesson: str, others: tuple[str, ...], tmp_path: Path) -> None:
    app = lesson_dashboard(tmp_path, lesson)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert [run.table.scheduler for run in app.runs] == ["llm-d", *others]
        for _ in range(10):
            await pilot.press("n")
        assert all(run.cursor.k > 0 for run in app.runs)
        panel = app.query_one(LessonPanel)
        await until(pilot, lambda: panel.outcome is not None, "the lesson's measured outcome")
        await pilot.press("end")
        assert "outcome, measured" in panel.text and "llm-d: shares" in panel.text
        assert all(f"{name}: shares" in panel.text for name in others)
