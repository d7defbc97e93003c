"""`sfqtui check` on a log with start rows: the worst gap at dispatch against the one at engine start."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from engine_starts_log import heavy_and_light, with_engine_starts
from sfqtui.cli.app import app


def test_check_says_the_worst_gap_at_dispatch_and_at_engine_start(tmp_path: Path, cli: CliRunner) -> None:
    log = with_engine_starts(heavy_and_light(tmp_path), tmp_path / "log.parquet")
    result = cli.invoke(app, ["check", str(log)])
    assert result.exit_code == 0, result.output
    # Light's two requests wait from t = 0.5 behind heavy's six in the engine's queue: 6 cost units.
    assert ("  worst |W_i - W_j| at dispatch none (no two users waited at once), at engine start 6 (heavy over light, "
            "t 0.500..3.000) (10 starts)\n  starts out of dispatch order: 0 pairs of two users' requests\nno violations") in result.output


def test_check_of_a_replay_without_start_rows_says_nothing_of_engine_starts(tmp_path: Path, cli: CliRunner) -> None:
    log = tmp_path / "log.parquet"
    assert cli.invoke(app, ["simulate", str(heavy_and_light(tmp_path)), "--slots", "2", "-o", str(log)]).exit_code == 0
    result = cli.invoke(app, ["check", str(log)])
    assert result.exit_code == 0 and "engine start" not in result.output, result.output
