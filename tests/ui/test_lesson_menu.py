"""Escape leaves a lesson for the menu of lessons; the menu opens on the lesson left."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli_app
from sfqtui.runs.opening import Opening
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import BACK_TO_LESSONS, SfqApp
from sfqtui.ui.commands.palette import palette_commands
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.side_by_side.lesson import LessonMenu, LessonPanel
from tests.dashboard import dashboard, lesson_dashboard, settle

SIZE = (160, 44)


async def test_escape_in_a_lesson_goes_back_to_the_lessons(tmp_path: Path) -> None:
    app = lesson_dashboard(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "escape: back to the lessons" in app.query_one(LessonPanel).text
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value == BACK_TO_LESSONS


async def test_escape_outside_a_lesson_does_nothing_and_the_palette_has_no_lessons() -> None:
    app = dashboard("seed-example.parquet")
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        await pilot.press("escape", "n")
        assert app.is_running and app.cursor.k >= 0
        assert not [c for c in palette_commands(app) if c.title == "Lessons"]
    assert app.return_value is None


async def test_the_menu_opens_on_the_lesson_left_and_enter_opens_it_again() -> None:
    menu = LessonMenu("trickle")
    async with menu.run_test() as pilot:
        await pilot.pause()
        await pilot.press("enter")
    assert menu.return_value == "trickle"


def test_teach_goes_from_a_lesson_to_the_menu_and_back_until_quit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop of `sfqtui teach`: the lesson named, escape, the menu (on that lesson), another lesson, quit."""
    menus: list[str | None] = []
    lessons: list[str] = []
    menu_answers = iter(["trickle"])
    lesson_answers = iter([BACK_TO_LESSONS, None])

    def menu_run(self: LessonMenu) -> str | None:
        menus.append(self.current)
        return next(menu_answers)

    def lesson_run(self: SfqApp) -> str | None:
        assert self.lesson is not None
        lessons.append(self.lesson.name)
        return next(lesson_answers)

    monkeypatch.setattr(LessonMenu, "run", menu_run)
    monkeypatch.setattr(SfqApp, "run", lesson_run)
    result = CliRunner().invoke(cli_app, ["teach", "worked-example"])
    assert result.exit_code == 0, result.output
    assert lessons == ["worked-example", "trickle"] and menus == ["worked-example"]


async def test_the_multi_turn_lesson_opens_and_the_why_panel_says_what_was_cached(tmp_path: Path) -> None:
    async with lesson_dashboard(tmp_path, "multi-turn").run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Chat users resend their whole conversation" in pilot.app.query_one(LessonPanel).text
    lesson = LESSONS["multi-turn"]  # one of its runs on its own: the why panel of a dispatch that started
    app = SfqApp([Opening(tmp_path / "multi-turn.parquet", is_log=False, config=lesson.config(lesson.main), slots_given=True)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(2):  # the first arrival, its dispatch
            await pilot.press("right")
        await pilot.pause()
        said = " ".join(app.query_one(ExplainPanel).text.split())
    assert "prefix cache: charged " in said and ("tokens of its prompt cached" in said or "not started yet" in said)
