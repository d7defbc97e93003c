"""`sfqtui teach`: the article's cases, side by side, step by step."""

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.runs.opening import Opening
from sfqtui.scenarios.lessons import LESSONS

_LIST = "\n\n".join(f"**{name}** ({lesson.section}): {lesson.title}, {' against '.join(lesson.schedulers)}" for name, lesson in LESSONS.items())


@refuses_bad_input
def teach(
    lesson: Annotated[str | None, typer.Argument(help="The lesson to open (see the list above); without one, a menu.", show_default=False)] = None,
    list_them: Annotated[bool, typer.Option("--list", help="Print the lessons and exit.")] = False,
) -> None:
    from sfqtui.ui.app import run_dashboard
    from sfqtui.ui.lesson import LessonMenu

    if list_them:
        for name, each in LESSONS.items():
            typer.echo(f"{name:<20} {each.section:<12} {each.title}: {' | '.join(each.schedulers)}, {each.slots} slot(s), by {each.lockstep}")
        return
    if lesson is None:
        lesson = LessonMenu().run()
        if lesson is None:
            return
    chosen = LESSONS.get(lesson)
    if chosen is None:
        raise fail(f"unknown lesson {lesson!r}; choose one of {', '.join(LESSONS)}")
    with tempfile.TemporaryDirectory(prefix="sfqtui-lesson-") as folder:
        trace = Path(folder) / f"{chosen.name}.parquet"
        chosen.write(trace)
        openings = [Opening(trace, is_log=False, config=chosen.config(name), slots_given=True) for name in chosen.schedulers]
        run_dashboard(openings, lockstep=chosen.lockstep, lesson=chosen)


TEACH_HELP = f"""Learn SFQ beside DRR and VTC on the article's cases: each lesson opens a scenario
under two schedulers in panes side by side, stepped together, with a narration of every
step, and ends with the measured outcome (shares, waits, worst gap).

{_LIST}
"""
