"""`sfqtui teach`: the article's cases, side by side, step by step."""

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.cli.openings import check_openings
from sfqtui.core.numbers import counted
from sfqtui.runs.opening import Opening
from sfqtui.scenarios.lessons import LESSONS, Lesson

_LIST = "\n\n".join(f"**{name}** ({lesson.section}): {lesson.title}, {' against '.join(lesson.schedulers)}" for name, lesson in LESSONS.items())


@refuses_bad_input
def teach(
    lesson: Annotated[str | None, typer.Argument(help="The lesson to open (see the list above); without one, a menu.", show_default=False)] = None,
    list_them: Annotated[bool, typer.Option("--list", help="Print the lessons and exit.")] = False,
) -> None:
    from sfqtui.ui.side_by_side.lesson import LessonMenu

    if list_them:
        for name, each in LESSONS.items():
            typer.echo(f"{name:<20} {each.section:<12} {each.title}: {' | '.join(each.schedulers)}, {counted(each.slots, 'slot')}, by {each.lockstep}")
            typer.echo(f"{'':<20} its figures: {'; '.join(each.commands)}")
        return
    if lesson is not None and lesson not in LESSONS:
        raise fail(f"unknown lesson {lesson!r}; choose one of {', '.join(LESSONS)}")
    last = lesson
    while True:
        if lesson is None:
            lesson = LessonMenu(last).run()
            if lesson is None:
                return  # quit from the menu
        if not _open(LESSONS[lesson]):
            return  # quit from the lesson
        last, lesson = lesson, None  # escape: back to the menu


def _open(lesson: Lesson) -> bool:
    """Open a lesson in the dashboard; whether the learner went back to the menu."""
    from sfqtui.ui.app import BACK_TO_LESSONS, run_dashboard

    with tempfile.TemporaryDirectory(prefix="sfqtui-lesson-") as folder:
        trace = Path(folder) / f"{lesson.name}.parquet"
        lesson.write(trace)
        openings = [Opening(trace, is_log=False, config=lesson.config(name), slots_given=True) for name in lesson.schedulers]
        check_openings(openings)
        return run_dashboard(openings, lockstep=lesson.lockstep, lesson=lesson) == BACK_TO_LESSONS


TEACH_HELP = f"""Learn SFQ beside DRR and VTC on the article's cases: each lesson opens a scenario
under two or three runs in panes side by side (schedulers, or one balancer beside replicas), stepped together, with a narration of every
step, and ends with the measured outcome (shares, waits, worst gap). Escape leaves a
lesson for the menu of lessons.

{_LIST}
"""
