"""Every bad trace is refused with one line naming column, row and rule; exit 2; no file written."""

import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app

GOOD = {
    "request_id": ["r1", "r2", "r3"],
    "user": ["a", "b", "a"],
    "arrival_s": [0.0, 1.0, 2.0],
    "input_tokens": [10, 20, 30],
    "max_tokens": [100, 100, 100],
    "output_tokens": [5, 6, 7],
}


def with_column(**changes: object) -> dict[str, object]:
    data = dict(GOOD)
    data.update(changes)
    return data


CASES = {
    "missing required column": ({k: v for k, v in GOOD.items() if k != "user"}, "missing required column 'user'"),
    "no input_tokens and no cost": ({k: v for k, v in GOOD.items() if k != "input_tokens"}, "missing column 'input_tokens'"),
    "arrival_s stored as strings": (with_column(arrival_s=["0", "1", "2"]), "column 'arrival_s', row 0"),
    "negative input tokens": (with_column(input_tokens=[10, -1, 3]), "column 'input_tokens', row 1"),
    "fractional input tokens": (with_column(input_tokens=[10.0, 2.5, 3.0]), "whole number"),
    "NaN arrival": (with_column(arrival_s=[0.0, math.nan, 2.0]), "column 'arrival_s', row 1"),
    "inf arrival": (with_column(arrival_s=[0.0, 1.0, math.inf]), "column 'arrival_s', row 2"),
    "negative arrival": (with_column(arrival_s=[-0.5, 1.0, 2.0]), "arrival_s must be >= 0"),
    "zero cost": (with_column(cost=[1.0, 0.0, 1.0]), "cost must be > 0"),
    "negative cost": (with_column(cost=[1.0, 2.0, -3.0]), "column 'cost', row 2"),
    "zero service": (with_column(service_s=[1.0, 0.0, 1.0]), "service_s must be > 0"),
    "duplicate request id": (with_column(request_id=["r1", "r2", "r1"]), "column 'request_id', row 2"),
    "weight changes": (with_column(weight=[1.0, 1.0, 2.0]), "a user's weight must be the same"),
    "zero weight": (with_column(weight=[0.0, 1.0, 0.0]), "weight must be > 0"),
    "max_tokens zero": (with_column(max_tokens=[100, 0, 100]), "max_tokens must be > 0"),
    "output_tokens negative": (with_column(output_tokens=[1, 2, -7]), "output_tokens must be >= 0"),
    "cached_tokens negative": (with_column(cached_tokens=[0, -16, 32]), "cached_tokens must be >= 0"),  # a recording's, read for a replay
    "fractional prediction": (with_column(predicted_cached_tokens=[0.0, 16.0, 2.5]), "predicted_cached_tokens must be a whole number"),
    "null user": (with_column(user=["a", None, "a"]), "column 'user', row 1"),
    "fractional priority": (with_column(priority=[1.0, 2.5, 0.0]), "value 2.5; priority must be an integer"),
    "priority beyond int64": (with_column(priority=[1.0, 1e30, 0.0]), "priority must be an integer"),
    "priority as strings": (with_column(priority=["high", "low", "low"]), "column 'priority', row 0"),
    "zero deadline": (with_column(deadline_s=[1.0, None, 0.0]), "column 'deadline_s', row 2"),
    "flow as numbers": (with_column(flow=[1, 2, 3]), "column 'flow', row 0"),
    "class as numbers": (with_column(**{"class": [1, 2, 3]}), "column 'class', row 0"),
}


def run_simulate(cli: CliRunner, trace: Path, out: Path) -> tuple[int, str, str]:
    result = cli.invoke(app, ["simulate", str(trace), "-o", str(out)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_trace_is_refused(case: str, tmp_path: Path, cli: CliRunner) -> None:
    data, expected = CASES[case]
    trace = tmp_path / "bad.parquet"
    pl.DataFrame(data).write_parquet(trace)
    out = tmp_path / "log.parquet"
    code, stdout, stderr = run_simulate(cli, trace, out)
    assert code == 2
    assert expected in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert "Traceback" not in stdout + stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [trace]


def test_missing_file(tmp_path: Path, cli: CliRunner) -> None:
    code, _, stderr = run_simulate(cli, tmp_path / "nope.parquet", tmp_path / "log.parquet")
    assert code == 2 and "no such file" in stderr


def test_empty_file(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "empty.parquet"
    trace.write_bytes(b"")
    code, _, stderr = run_simulate(cli, trace, tmp_path / "log.parquet")
    assert code == 2 and "empty" in stderr


def test_not_parquet(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "trace.parquet"
    trace.write_text("request_id,user,arrival_s\nr1,a,0\n")
    code, _, stderr = run_simulate(cli, trace, tmp_path / "log.parquet")
    assert code == 2 and "not a readable Parquet file" in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_zero_rows(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "trace.parquet"
    pl.DataFrame({k: [] for k in GOOD}, schema={"request_id": pl.String, "user": pl.String, "arrival_s": pl.Float64,
                                                 "input_tokens": pl.Int64, "max_tokens": pl.Int64, "output_tokens": pl.Int64}).write_parquet(trace)
    code, _, stderr = run_simulate(cli, trace, tmp_path / "log.parquet")
    assert code == 2 and "no rows" in stderr


def test_a_real_process_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    trace = tmp_path / "bad.parquet"
    pl.DataFrame(with_column(cost=[1.0, 0.0, 1.0])).write_parquet(trace)
    exe = Path(sys.executable).with_name("sfqtui")
    result = subprocess.run([str(exe), "simulate", str(trace), "-o", str(tmp_path / "log.parquet")], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"sfqtui: error: {trace}: column 'cost', row 1 (counting from 0): value 0.0; cost must be > 0"
    ]


def test_bad_option_is_refused(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "t.parquet"
    pl.DataFrame(GOOD).write_parquet(trace)
    result = cli.invoke(app, ["simulate", str(trace), "-o", str(tmp_path / "l.parquet"), "--slots", "0"])
    assert result.exit_code == 2 and "--slots must be >= 1" in result.stderr
