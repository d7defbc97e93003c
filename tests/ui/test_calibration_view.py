"""The calibration view (issue 10, in the dashboard): measures rebuilt from the log, the
screen behind `c`, and an estimator compared from the palette."""

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from textual.pilot import Pilot

from sfqtui.core.analysis.calibration import calibrate
from sfqtui.core.analysis.log_calibration import NO_OUTPUTS, calibrate_log, order_change
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.load import load_trace
from sfqtui.ui.app import SfqApp
from sfqtui.ui.screens.calibration_view import CalibrationScreen, CalibrationText
from tests.dashboard import TRACES, dashboard, run_command, settle, until

CALIBRATION = TRACES / "calibration.parquet"
SIZE = (120, 34)


def loaded(estimator: EstimatorParams, trace: Path = CALIBRATION) -> Run:
    return Run(Opening(trace, is_log=False, config=ReplayConfig("sfq", estimator=estimator))).load_all()


@pytest.mark.parametrize("estimator", [EstimatorParams(), EstimatorParams(scope="user"), EstimatorParams(update="ema"),
                                       EstimatorParams(input_weight=3.0, output_weight=0.5, update="cumulative"),
                                       EstimatorParams(oracle=True)], ids=["global", "user", "ema", "weights", "oracle"])
def test_the_log_alone_gives_the_figures_of_calibrate(estimator: EstimatorParams) -> None:
    run = loaded(estimator)
    from_log = {u.user: u for u in calibrate_log(run.table, run.metadata).users}
    replayed = calibrate(load_trace(CALIBRATION).trace, ReplayConfig("sfq", slots=run.metadata["slots"], estimator=estimator))
    assert sorted(from_log) == sorted(u.user for u in replayed.users)
    for expected in replayed.users:
        got = from_log[expected.user]
        assert got.dispatched == expected.dispatched
        for name in ("charged", "actual", "bias", "share_charged", "share_actual"):
            assert getattr(got, name) == pytest.approx(getattr(expected, name), rel=1e-9), name


def test_the_padder_is_overcharged_under_a_global_ratio_and_not_per_user() -> None:
    run = loaded(EstimatorParams())
    measures = calibrate_log(run.table, run.metadata)
    bias = {u.user: u.bias for u in measures.users}
    padder, honest, gain = bias["padder"], bias["honest"], measures.users[0].share_gain
    assert padder is not None and honest is not None and gain is not None
    assert padder > 2 and honest < 0.7
    assert measures.users[0].user == "padder" and gain < -0.15
    assert measures.unmeasured == 0 and sum(measures.output_bins) == measures.dispatches == 900
    assert [s.key for s in measures.ratios] == ["global"] and measures.ratios[0].ideal == pytest.approx(0.503, abs=1e-3)
    per_user = loaded(EstimatorParams(scope="user"))
    assert all(u.bias is not None and abs(u.bias - 1) < 0.02 for u in calibrate_log(per_user.table, per_user.metadata).users)
    assert {s.key for s in calibrate_log(per_user.table, per_user.metadata).ratios} == {"padder", "typical", "honest"}


def test_a_per_user_ratio_moves_the_padder_up() -> None:
    change = order_change(loaded(EstimatorParams()).table, loaded(EstimatorParams(scope="user")).table)
    assert change.compared == 900 and 0 < change.changed <= 900
    assert change.moves[0].user == "padder" and change.moves[0].position < 0 and change.moves[0].wait < 0
    assert change.moves[-1].user == "honest" and change.moves[-1].position > 0


def test_a_log_without_outputs_or_without_an_estimator_says_so(tmp_path: Path) -> None:
    silent = tmp_path / "no-outputs.parquet"
    pl.read_parquet(CALIBRATION).drop("output_tokens").write_parquet(silent)
    run = loaded(EstimatorParams(), silent)
    with pytest.raises(ValueError, match=NO_OUTPUTS):
        calibrate_log(run.table, run.metadata)
    priced = Run(Opening(TRACES / "demo.parquet", is_log=False, config=ReplayConfig("sfq"))).load_all()
    with pytest.raises(ValueError, match="cost column"):
        calibrate_log(priced.table, priced.metadata)


async def measured(pilot: Pilot) -> CalibrationScreen:
    """The calibration screen once its figures are final."""
    await until(pilot, lambda: isinstance(pilot.app.screen, CalibrationScreen) and pilot.app.screen.measured, "the calibration figures")
    await pilot.pause()
    assert isinstance(pilot.app.screen, CalibrationScreen)
    return pilot.app.screen


async def test_c_opens_the_table_and_the_chart_and_closes() -> None:
    app = dashboard("calibration.parquet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        text = (await measured(pilot)).query_one(CalibrationText).text
        assert "ratio global, window 1,000" in text
        table = text[text.index("worst bias first"):]
        assert table.index("padder") < table.index("honest") < table.index("typical")
        assert "2.47" in table and "ideal 0.503" in text
        chart = next(line for line in text.splitlines() if line.startswith("global "))
        assert set(chart.split()[1]) <= set("▁▂▃▄▅▆▇█") and len(chart.split()[1]) == 60
        assert "≤1/16" in text and "≥16" in text
        await pilot.press("c")
        assert not isinstance(app.screen, CalibrationScreen)
        await pilot.press("c")
        await measured(pilot)
        await pilot.press("escape")
        assert not isinstance(app.screen, CalibrationScreen)


async def test_a_trace_without_outputs_gets_a_clear_message(tmp_path: Path) -> None:
    silent = tmp_path / "no-outputs.parquet"
    pl.read_parquet(CALIBRATION).drop("output_tokens").write_parquet(silent)
    app = dashboard(silent)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        assert NO_OUTPUTS in (await measured(pilot)).query_one(CalibrationText).text


async def test_comparing_a_per_user_ratio_from_the_palette_says_who_moved() -> None:
    app = dashboard("calibration.parquet")
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Calibration view" in titles and "Compare estimator: oracle" in titles
        assert "Compare estimator: ratio per user" in titles and "Compare estimator: ratio global" not in titles
        await run_command(pilot, "Compare estimator: ratio per user")
        screen = await measured(pilot)
        twin = app.runs[1].opening if len(app.runs) == 2 else None
        assert isinstance(twin, Opening) and twin.config.estimator == replace(EstimatorParams(), scope="user")
        assert screen.twin is app.runs[1]
        text = screen.query_one(CalibrationText).text
        assert "against ratio per user, window 1,000" in text
        changed = next(line for line in text.splitlines() if "dispatch positions changed" in line)
        assert int(changed.split(" of ")[0].replace(",", "")) > 0
        moves = text[text.index("who moved"):].splitlines()
        assert moves[2].startswith("padder") and moves[2].endswith("moved up")
        assert moves[-1].startswith("honest") and moves[-1].endswith("moved down")
        await pilot.press("escape")
        assert app.side_by_side


def test_the_calibration_screen(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("c")
        await measured(pilot)

    app = SfqApp(Opening(CALIBRATION, is_log=False, config=ReplayConfig("sfq")))
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
