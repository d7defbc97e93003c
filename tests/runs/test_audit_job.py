"""The invariant audit of a big log runs in a child process and finds what the thread finds."""

from __future__ import annotations

from pathlib import Path

import pytest

import sfqtui.runs.audit_job as audit_job
from sfqtui.core.analysis.audit import Violation, audit, by_seq
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.audit_job import audit_in_child
from sfqtui.runs.opening import Opening
from sfqtui.trace.eventlog import log_rows, read_log
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from tests.dashboard import SIZE, dashboard, settle

TRICKLE = Path(__file__).resolve().parents[2] / "traces" / "trickle.parquet"
LOOPHOLE = ReplayConfig("sfq-reset", 1)  # sfq-reset breaks the §3.3 bound on this trace


def whole_log_violations(log: Path) -> list[Violation]:
    """The violations found by auditing the whole log read at once."""
    return by_seq(audit(log_rows(read_log(log)[0])).violations)


@pytest.fixture
def loophole_log(tmp_path: Path) -> Path:
    log = tmp_path / "log.parquet"
    simulate(load_trace(TRICKLE), LOOPHOLE, log)
    return log


def test_the_child_finds_what_the_whole_log_audit_finds_in_a_log_and_in_a_trace(loophole_log: Path) -> None:
    expected = whole_log_violations(loophole_log)
    assert expected
    assert audit_in_child(Opening(loophole_log, is_log=True, config=LOOPHOLE), lambda: False) == expected
    assert audit_in_child(Opening(TRICKLE, is_log=False, config=LOOPHOLE, slots_given=True), lambda: False) == expected


def test_a_cancelled_audit_stops_its_child(loophole_log: Path) -> None:
    assert audit_in_child(Opening(loophole_log, is_log=True, config=LOOPHOLE), lambda: True) is None


def test_a_failure_in_the_child_is_raised_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"missing\.parquet"):
        audit_in_child(Opening(tmp_path / "missing.parquet", is_log=True, config=LOOPHOLE), lambda: False)


async def test_the_dashboard_audits_a_big_log_in_a_child(loophole_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_job, "IN_CHILD_FROM", 0)
    expected = whole_log_violations(loophole_log)
    app = dashboard(loophole_log, is_log=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.checked and app.cursor.violations == sorted({v.seq for v in expected})
        assert [v for k in app.cursor.violations for v in app.current.broken[k]] == expected
