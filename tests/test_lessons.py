"""The lessons of `sfqtui teach`: each one's scenario generates, opens and measures its outcome."""

import re
from pathlib import Path

import pytest

from sfqtui.core.log.lockstep import MODES
from sfqtui.core.schedulers import REGISTRY
from sfqtui.scenarios import SCENARIOS
from sfqtui.scenarios.lessons import LESSONS, Lesson
from sfqtui.trace.load import load_trace


def test_the_issues_lessons_in_order() -> None:
    assert list(LESSONS) == ["worked-example", "heavy-vs-light", "idle-return", "trickle", "global-idle", "weights", "estimate-vs-actual"]
    assert [LESSONS[n].schedulers for n in ("worked-example", "trickle", "estimate-vs-actual")] == [("sfq", "drr"), ("sfq-reset", "sfq"), ("sfq", "vtc")]


@pytest.mark.parametrize("lesson", LESSONS.values(), ids=list(LESSONS))
def test_each_lesson_is_well_formed(lesson: Lesson) -> None:
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", lesson.name)
    assert lesson.section.startswith("§") and lesson.title
    assert 2 <= len(re.findall(r"[.!?](?:\s|$)", lesson.introduction)) <= 4, lesson.introduction
    assert lesson.scenario in SCENARIOS and lesson.lockstep in MODES and lesson.slots >= 1
    assert all(s in REGISTRY for s in lesson.schedulers) and len(lesson.compared) >= 1


@pytest.mark.parametrize("lesson", LESSONS.values(), ids=list(LESSONS))
def test_each_lessons_trace_opens_and_its_outcome_is_measured(lesson: Lesson, tmp_path: Path) -> None:
    path = tmp_path / f"{lesson.name}.parquet"
    lesson.write(path)
    loaded = load_trace(path)
    assert loaded.suggested_slots == lesson.slots and len(loaded.trace) == len(lesson.frame())
    lines = lesson.outcome(loaded.trace)
    assert len(lines) == 3 * len(lesson.schedulers)
    for scheduler, (shares, waits, gap) in zip(lesson.schedulers, zip(*[iter(lines)] * 3), strict=True):
        assert shares.startswith(f"{scheduler}: shares of ") and "%" in shares
        assert waits.startswith(f"{scheduler}: waits p50 / p99: ") and " s" in waits
        assert gap.startswith(f"{scheduler}: worst |W_i - W_j| in ")
        assert ("; in actual cost " in gap) == lesson.in_actual_cost


def test_the_outcomes_show_what_the_introductions_promise() -> None:
    trickle = LESSONS["trickle"]
    shares = [line for line in trickle.outcome(trickle.trace()) if "shares" in line]
    assert shares == ["sfq-reset: shares of charged cost while congested: bulk-0 25.0%, bulk-1 24.9%, trickle 50.1%",
                      "sfq: shares of charged cost while congested: bulk-0 33.3%, bulk-1 33.3%, trickle 33.3%"]
    weights = LESSONS["weights"]
    assert [line for line in weights.outcome(weights.trace()) if "shares" in line] == [
        "sfq: shares of charged cost while congested: w-0 33.3%, w-1 66.7%",
        "drr: shares of charged cost while congested: w-0 33.3%, w-1 66.7%"]
    idle = LESSONS["idle-return"]
    waits = [line for line in idle.outcome(idle.trace()) if "waits" in line]
    assert waits[0].startswith("sfq: waits p50 / p99: returner 5.9 / 13.3 s") and waits[1].startswith("drr: waits p50 / p99: returner 6.9 / 14.5 s")
