"""The lessons of `sfqtui teach`: each one's scenario generates, opens and measures its outcome."""

import re
from pathlib import Path

import pytest

from sfqtui.core.log.lockstep import MODES
from sfqtui.core.replay.run_spec import RunSpec
from sfqtui.core.schedulers import REGISTRY
from sfqtui.scenarios import SCENARIOS
from sfqtui.scenarios.lessons import LESSONS, Lesson
from sfqtui.trace.load import load_trace


def test_the_issues_lessons_in_order() -> None:
    assert list(LESSONS) == ["worked-example", "heavy-vs-light", "idle-return", "trickle", "global-idle", "weights", "estimate-vs-actual",
                             "replicas", "multi-turn", "round-robin-tokens", "priority-bands"]
    assert [LESSONS[n].schedulers for n in ("worked-example", "trickle", "estimate-vs-actual")] == [("sfq", "drr"), ("sfq-reset", "sfq"), ("sfq", "vtc")]


@pytest.mark.parametrize("lesson", LESSONS.values(), ids=list(LESSONS))
def test_each_lesson_is_well_formed(lesson: Lesson) -> None:
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", lesson.name)
    assert lesson.section.startswith("§") and lesson.title
    assert 2 <= len(re.findall(r"[.!?](?:\s|$)", lesson.introduction)) <= 4, lesson.introduction
    assert lesson.scenario in SCENARIOS and lesson.lockstep in MODES and lesson.slots >= 1
    assert all(RunSpec.parse(s).scheduler in REGISTRY for s in lesson.schedulers) and len(lesson.compared) >= 1


@pytest.mark.parametrize("lesson", LESSONS.values(), ids=list(LESSONS))
def test_each_lessons_trace_opens_and_its_outcome_is_measured(lesson: Lesson, tmp_path: Path) -> None:
    path = tmp_path / f"{lesson.name}.parquet"
    lesson.write(path)
    loaded = load_trace(path)
    assert loaded.suggested_slots == lesson.slots and len(loaded.trace) == len(lesson.frame())
    *lines, reproduce = lesson.outcome(loaded.trace)
    assert reproduce.startswith("the same figures: sfqtui gen ")
    if lesson.across_replicas:
        assert len(lines) == 2 * len(lesson.schedulers)
        for spec, (shares, measures) in zip(lesson.schedulers, zip(*[iter(lines)] * 2), strict=True):
            label = f"{RunSpec.parse(spec).scheduler}, "
            assert shares.startswith(label) and ": shares while congested " in shares and "%" in shares
            assert measures.startswith(label) and " c_max, stranded capacity " in measures and measures.count(" s") >= 1
        return
    per_run = 4 if lesson.charges else 3
    if lesson.charges:  # each run's charges, then who gains
        assert lines.pop().startswith(f"share of all charges, {lesson.schedulers[1]} against {lesson.schedulers[0]}: ")
    assert len(lines) == per_run * len(lesson.schedulers)
    for scheduler, (shares, waits, gap, *charged) in zip(lesson.schedulers, zip(*[iter(lines)] * per_run), strict=True):
        assert charged == [] or charged[0].startswith(f"{scheduler}: charged in all: ")
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


def test_the_replicas_lesson_reproduces_dynamo_15187() -> None:
    """4:1 under one SFQ, about 1:1 on two replicas whose hash routing gives each class a
    replica of its own (each serves its one user on its 2 slots), 4:1 again with share global;
    once regular is done on replica 0, its 2 slots stand idle while premium waits on replica 1."""
    lesson = LESSONS["replicas"]
    assert lesson.schedulers == ("sfq", "sfq@replicas=2,router=hash,share=none", "sfq@replicas=2,router=hash,share=global")
    assert [RunSpec.parse(s).replica_settings(lesson.config("sfq").replicas).count for s in lesson.schedulers] == [1, 2, 2]
    one, one_measures, split, split_measures, shared, shared_measures, _ = lesson.outcome(lesson.trace())
    assert one == "sfq, one balancer: shares while congested premium 80.0%, regular 20.0% (4 : 1); first 320 dispatches 256 : 64"
    assert one_measures == "sfq, one balancer: worst |W_i - W_j| 1.0 c_max, stranded capacity 0.0%, makespan 150.0 s"
    # Regular's last two dispatches leave premium alone for the rest of t = 99: 198 of premium's 200 congested ones count.
    assert split == ("sfq, 2 replicas, hash, share none: shares while congested premium 49.7%, regular 50.3% (1 : 1); "
                     "first 320 dispatches 160 : 160")
    # 2 of 4 slots idle from t = 100 while premium still waits, until its last dispatches at t = 199: 198 of 800 slot-seconds.
    assert split_measures == ("sfq, 2 replicas, hash, share none: worst |W_i - W_j| 150.5 c_max, stranded capacity 24.8%, "
                              "makespan 200.0 s (1.33 × one balancer's)")
    assert shared == one.replace("one balancer", "2 replicas, hash, share global")
    assert shared_measures == ("sfq, 2 replicas, hash, share global: worst |W_i - W_j| 1.0 c_max, stranded capacity 0.0%, "
                               "makespan 150.0 s (1.00 × one balancer's)")


def test_the_policy_lessons_show_what_their_introductions_promise() -> None:
    tokens = LESSONS["round-robin-tokens"]
    assert [line for line in tokens.outcome(tokens.trace()) if "shares" in line] == [
        "llm-d: shares of charged cost while congested: long 91.3%, short 8.7%",
        "sfq: shares of charged cost while congested: long 50.6%, short 49.4%",
        "las: shares of charged cost while congested: long 50.6%, short 49.4%"]
    bands = LESSONS["priority-bands"]
    assert [line for line in bands.outcome(bands.trace()) if "shares" in line] == [
        "llm-d: shares of charged cost while congested: batch 0.0%, interactive 100.0%",
        "sfq: shares of charged cost while congested: batch 19.9%, interactive 80.1%"]
