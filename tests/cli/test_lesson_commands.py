"""Each lesson ends with the commands that print the figures of its outcome: run here, as
printed, their figures are the lesson's (the tutorial quotes both)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.numbers import amount, percent
from sfqtui.core.replay.run_spec import RunSpec
from sfqtui.scenarios.lessons import LESSONS, TENTHS, Lesson

DOCS = Path(__file__).resolve().parents[2] / "docs"


def run(cli: CliRunner, command: str, *extra: str) -> str:
    words = shlex.split(command)
    assert words[0] == "sfqtui"
    result = cli.invoke(app, [*words[1:], *extra])
    assert result.exit_code == 0, (command, result.output)
    return result.stdout


def figures(cli: CliRunner, command: str) -> dict[str, Any]:
    return json.loads(run(cli, command, "--json"))


def shares(report: dict[str, Any]) -> str:
    return ", ".join(f"{user} {percent(f['share_congested'])}" for user, f in report["users"].items())


@pytest.mark.parametrize("lesson", LESSONS.values(), ids=list(LESSONS))
def test_a_lessons_commands_print_its_figures(lesson: Lesson, cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    *outcome, reproduce = lesson.outcome(lesson.trace())
    assert reproduce == f"the same figures: {'; '.join(lesson.commands)}"
    gen, *commands = lesson.commands
    run(cli, gen)
    if lesson.across_replicas:
        for spec, command, (line, measures) in zip(lesson.schedulers, commands, zip(*[iter(outcome)] * 2), strict=True):
            printed = figures(cli, command)["schedulers"][RunSpec.parse(spec).scheduler]
            assert f"shares while congested {shares(printed)}" in line
            replicas = printed.get("replicas")
            if replicas is not None:
                assert f"stranded capacity {percent(replicas['stranded'])}, makespan {TENTHS(replicas['makespan_s'])} s" in measures
                assert f"worst |W_i - W_j| {TENTHS(replicas['worst_gap_cmax'])} c_max" in measures
        return
    if lesson.charges:  # one command a run, each with its engine and pricing options
        for spec, command, (line, waits, _gap, charged) in zip(lesson.schedulers, commands, zip(*[iter(outcome)] * 4)):
            report = figures(cli, command)["schedulers"][RunSpec.parse(spec).scheduler]
            assert line.endswith(f" while congested: {shares(report)}")
            assert waits.endswith(", ".join(f"{user} {TENTHS(f['wait_p50'])} / {TENTHS(f['wait_p99'])} s" for user, f in report["users"].items()))
            assert [part.rsplit(" ", 1)[0] for part in charged.split(": charged in all: ")[1].split(", ")] == list(report["users"])
        return
    compare, *actual = commands
    printed = figures(cli, compare)["schedulers"]
    assert list(printed) == list(lesson.schedulers)
    for scheduler, (line, waits, gap) in zip(lesson.schedulers, zip(*[iter(outcome)] * 3), strict=True):
        report = printed[scheduler]
        assert line.endswith(f" while congested: {shares(report)}")
        assert waits.endswith(", ".join(f"{user} {TENTHS(f['wait_p50'])} / {TENTHS(f['wait_p99'])} s" for user, f in report["users"].items()))
        worst = report["worst_gap"]
        assert f" {amount(worst['gap'])} ({worst['ahead']} over {worst['behind']}, " in gap
    if lesson.in_actual_cost:
        [calibrate] = actual
        in_actual = figures(cli, calibrate)["worst_gap_actual"]
        gaps = [line for line in outcome if "in actual cost" in line]
        assert f"in actual cost {amount(in_actual['estimator']['gap'])} (" in gaps[0]
        assert f"in actual cost {amount(in_actual[lesson.schedulers[1]]['gap'])} (" in gaps[1]


def test_the_tutorial_quotes_each_lessons_commands() -> None:
    tutorial = (DOCS / "tutorial.md").read_text()
    for lesson in LESSONS.values():
        for command in lesson.commands:
            assert command in tutorial, command


def test_teach_list_prints_each_lessons_commands(cli: CliRunner) -> None:
    listed = run(cli, "sfqtui teach --list").splitlines()
    assert len(listed) == 2 * len(LESSONS)
    for lesson, (line, figures_line) in zip(LESSONS.values(), zip(*[iter(listed)] * 2), strict=True):
        assert line.startswith(lesson.name) and figures_line.split() == ["its", "figures:", *"; ".join(lesson.commands).split()]
