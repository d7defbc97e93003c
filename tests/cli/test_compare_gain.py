"""`compare` reports the §3.3 figure `check` reports: the worst W_i - W_j of any user over one
that stays backlogged, against 2 c_max (the trickle loophole shows there, not in §3.2's gap)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.audit import audit
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.trace.eventlog import iter_log_rows

TRACES = Path(__file__).resolve().parents[2] / "traces"


def compared(cli: CliRunner, trace: Path, schedulers: str) -> dict[str, dict[str, object]]:
    result = cli.invoke(app, ["compare", str(trace), "--schedulers", schedulers, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["schedulers"]


def checked(cli: CliRunner, trace: Path, scheduler: str, tmp_path: Path) -> dict[str, object]:
    """What `check` finds in the log `simulate` writes: its worst gain, as compare's JSON shapes it (without times)."""
    log = tmp_path / f"{scheduler}.parquet"
    assert cli.invoke(app, ["simulate", str(trace), "-s", scheduler, "-o", str(log)]).exit_code == 0
    report = audit(iter_log_rows(log))
    found = report.worst_gap
    assert found is not None
    shown = cli.invoke(app, ["check", str(log)]).stdout
    assert f"worst W_i - W_j found: {found.user} gained" in shown
    return {"gap": found.gap, "ahead": found.user, "behind": found.behind, "start_seq": found.start_seq, "end_seq": found.end_seq,
            "bound": 2 * report.c_max}


def without_times(gain: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in gain.items() if k not in ("start_t", "end_t")}


def test_the_trickle_loophole_is_checks_figure(tmp_path: Path, cli: CliRunner) -> None:
    trace = TRACES / "trickle.parquet"
    figures = compared(cli, trace, "sfq-reset,sfq,fifo")
    reset = figures["sfq-reset"]
    assert reset["worst_gap"]["gap"] == 400  # type: ignore[index]  # §3.2: both backlogged, it hides the loophole
    assert without_times(reset["worst_gain"]) == checked(cli, trace, "sfq-reset", tmp_path)  # type: ignore[arg-type]
    assert reset["worst_gain"]["gap"] == 35_100 and reset["worst_gain"]["bound"] == 800  # type: ignore[index]
    assert (reset["worst_gain"]["start_t"], reset["worst_gain"]["end_t"]) == (0.0, 199.0)  # type: ignore[index]
    sfq = figures["sfq"]
    assert without_times(sfq["worst_gain"]) == checked(cli, trace, "sfq", tmp_path)  # type: ignore[arg-type]
    assert sfq["worst_gain"]["gap"] <= sfq["worst_gain"]["bound"]  # type: ignore[index]
    assert figures["fifo"]["worst_gain"] is None  # no audit bounds FIFO's gain


def test_the_text_table_and_the_lesson_say_it_too(cli: CliRunner) -> None:
    text = cli.invoke(app, ["compare", str(TRACES / "trickle.parquet"), "--schedulers", "sfq-reset,sfq"], env={"COLUMNS": "200"}).stdout
    assert "worst W_i - W_j while j stays backlogged (§3.3): 35,100 (trickle over bulk-0, t 0..199), over 2 c_max = 800" in text
    assert "(§3.3): 400 (bulk-0 over trickle" in text and "within 2 c_max = 800" in text
    lesson = LESSONS["trickle"]
    gaps = [line for line in lesson.outcome(lesson.trace()) if "worst" in line]
    assert "of any user over a backlogged one (§3.3) 35,100 (trickle over bulk-0), over 2 c_max = 800" in gaps[0]
    assert gaps[1].startswith("sfq: ") and "within 2 c_max = 800" in gaps[1]


@pytest.mark.parametrize("name", ["weighted.parquet", "heavy-vs-light.parquet"])
def test_compare_and_check_agree_on_other_traces(name: str, tmp_path: Path, cli: CliRunner) -> None:
    gain = compared(cli, TRACES / name, "sfq")["sfq"]["worst_gain"]
    assert without_times(gain) == checked(cli, TRACES / name, "sfq", tmp_path)  # type: ignore[arg-type]
