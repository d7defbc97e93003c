"""The calibration measures of semantics §10 and `sfqtui calibrate`."""

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.calibration import CalibrationReport, calibrate
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.requests.trace import Trace
from sfqtui.trace.load import load_trace

pytestmark = pytest.mark.xdist_group("test_calibration")  # one worker generates the calibration trace once


@pytest.fixture(scope="module")
def calibration_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calibration") / "calibration.parquet"
    assert CliRunner().invoke(app, ["gen", "calibration", "-o", str(path)]).exit_code == 0
    return path


def bias_by_user(report: CalibrationReport) -> dict[str, float]:
    """Each measured user's bias (a user with no actual cost has none, and is left out)."""
    return {u.user: u.bias for u in report.users if u.bias is not None}


def scenario_report(path: Path, **estimator: Any) -> CalibrationReport:
    loaded = load_trace(path)
    return calibrate(loaded.trace, ReplayConfig("sfq", loaded.suggested_slots or 1, estimator=EstimatorParams(**estimator)))


def hand_trace() -> Trace:
    """A and B each send two requests at t = 0 (input 10, max_tokens 100); A writes 10
    tokens, B writes 90. One slot, one second each."""
    return Trace(request_id=["a1", "b1", "a2", "b2"], user=["A", "B", "A", "B"], arrival_s=[0.0] * 4,
                 input_tokens=[10] * 4, max_tokens=[100] * 4, output_tokens=[10, 90, 10, 90], service_s=[1.0] * 4)


def test_figures_match_a_hand_computation() -> None:
    report = calibrate(hand_trace(), ReplayConfig("sfq", 1, estimator=EstimatorParams(update="cumulative")))
    # t=0: meters tie, A first at ratio 1 (nothing learned): 10 + 2 * 100 = 210.
    # t=1: a1 done, ratio 10/100; B (meter 0) goes: 10 + 2 * (100 * 0.1) = 30.
    # t=2: b1 done, ratio 100/200; B (30 < 210) again: 10 + 2 * (100 * 0.5) = 110.
    # t=3: b2 done, ratio 190/300; A: 10 + 2 * (100 * (190/300)).
    a_charged = 210 + (10 + 2 * (100 * (190 / 300)))
    b_charged = 30 + 110.0
    a_actual, b_actual = 2 * (10 + 2 * 10), 2 * (10 + 2 * 90)
    total_charged, total_actual = a_charged + b_charged, a_actual + b_actual
    a, b = report.users  # worst bias first: A is charged 5.8x what it used, B 0.37x
    assert (a.user, a.dispatched, a.charged, a.actual) == ("A", 2, a_charged, a_actual)
    assert (b.user, b.dispatched, b.charged, b.actual) == ("B", 2, b_charged, b_actual)
    assert a.bias == pytest.approx(a_charged / a_actual) and b.bias == pytest.approx(b_charged / b_actual)
    assert a.share_charged == pytest.approx(a_charged / total_charged)
    assert a.share_actual == pytest.approx(a_actual / total_actual)
    assert b.share_gain == pytest.approx(b_actual / total_actual - b_charged / total_charged)
    # In charged cost A leads by its first charge; in actual cost B gets 380 while A gets nothing.
    assert report.gap_charged.gap is not None and report.gap_actual.gap is not None
    assert (report.gap_charged.gap.ahead, report.gap_charged.gap.gap) == ("A", 210.0)
    assert (report.gap_actual.gap.ahead, report.gap_actual.gap.behind, report.gap_actual.gap.gap) == ("B", "A", 380.0)
    [track] = report.ratios
    assert track.key == "global"
    assert track.samples == [(0.0, 1.0), (1.0, 0.1), (2.0, 0.5), (3.0, 190 / 300)]
    assert track.final == 200 / 400 and track.actual == 200 / 400


def test_oracle_bias_is_one_for_every_user(calibration_trace: Path) -> None:
    for trace_report in (calibrate(hand_trace(), ReplayConfig("sfq", 1, estimator=EstimatorParams(oracle=True))),
                         scenario_report(calibration_trace, oracle=True)):
        assert trace_report.users and all(u.bias == 1.0 for u in trace_report.users)
        assert trace_report.ratios == []
        assert trace_report.gap_charged == trace_report.gap_actual


def test_global_ratio_overcharges_the_padder_and_undercharges_the_honest_user(calibration_trace: Path) -> None:
    bias = bias_by_user(scenario_report(calibration_trace, scope="global"))
    assert bias["padder"] > 2.0
    assert bias["honest"] < 0.75
    assert 0.9 < bias["typical"] < 1.1


def test_per_user_ratio_brings_every_bias_close_to_one(calibration_trace: Path) -> None:
    report = scenario_report(calibration_trace, scope="user")
    assert all(0.95 < b < 1.05 for b in bias_by_user(report).values())
    assert {t.key for t in report.ratios} == {"honest", "padder", "typical"}
    for track in report.ratios:
        assert track.samples[0][1] == 1.0  # the start ratio, before the key's first completion
        assert track.final == pytest.approx(track.actual, rel=0.05)


def test_calibrate_json_reports_bias_gaps_and_a_suggestion(calibration_trace: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["calibrate", str(calibration_trace), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["ratio"]["scope"] == "global" and payload["ratio"]["keys"][0]["over_time"]
    users = {u["user"]: u for u in payload["users"]}
    assert set(users["padder"]) >= {"user", "charged_cost", "actual_cost", "bias", "share_charged", "share_actual"}
    assert payload["users"][0]["user"] == "padder"  # worst bias first
    assert users["padder"]["share_charged"] > users["padder"]["share_actual"]
    gaps = payload["worst_gap_actual"]
    assert set(gaps) == {"estimator", "oracle", "vtc"}
    assert gaps["oracle"]["gap"] < gaps["estimator"]["gap"] and gaps["vtc"]["gap"] < gaps["estimator"]["gap"]
    assert len(payload["alternatives"]) == 5  # 2 scopes (no model column) x 3 updates, less the current one
    suggestion = payload["suggestion"]
    assert suggestion["ratio_scope"] == "user"
    assert suggestion["worst_gap_actual"] < gaps["estimator"]["gap"] / 10
    assert suggestion["worst_gap_actual"] == min(a["worst_gap_actual"]["gap"] for a in payload["alternatives"])


def test_calibrate_prints_tables_for_people(calibration_trace: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["calibrate", str(calibration_trace), "--ratio-scope", "user"])
    assert result.exit_code == 0, result.output
    for text in ("Learned output ratio", "worst bias first", "actual cost", "oracle", "vtc", "Other ratio rules"):
        assert text in result.stdout


def test_calibrate_refuses_a_trace_without_outputs(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "seed.parquet"
    cli.invoke(app, ["gen", "seed-example", "-o", str(trace)])
    result = cli.invoke(app, ["calibrate", str(trace)])
    assert result.exit_code == 2
    assert "calibration needs actual outputs" in result.stderr and "output_tokens" in result.stderr
