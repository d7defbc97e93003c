"""`sfqtui fit` on times that follow no engine: the model is written, the fit says plainly that it
is poor, and the command exits 1 (as `check` does when an audit fails)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.engine_fit.fit import POOR_MEDIAN, fit_engine
from sfqtui.core.analysis.engine_fit.lived import Served
from sfqtui.trace.write import write_trace
from tests.cli.test_fit_cli import gateway_log


def random_times(path: Path, requests: int = 100) -> Path:
    """A gateway's log whose service times are drawn at random, whatever the tokens."""
    rng = random.Random(1)
    frame = pl.DataFrame({"request_id": [f"r{k}" for k in range(requests)], "user": ["u"] * requests,
                          "arrival_s": [k * 0.5 for k in range(requests)], "input_tokens": [rng.randint(1, 100) for _ in range(requests)],
                          "output_tokens": [rng.randint(1, 50) for _ in range(requests)],
                          "service_s": [rng.uniform(0.05, 5.0) for _ in range(requests)]})
    write_trace(frame, path, {"service": "measured", "source": "litellm"})
    return path


def test_a_poor_fit_warns_writes_the_model_and_exits_1(cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    result = cli.invoke(app, ["fit", str(random_times(tmp_path / "log.parquet")), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "sfqtui: warning: a poor fit: its held-out service times are off by" in result.stderr
    assert "(over 20.0%)" in result.stderr and "Traceback" not in result.stderr
    fit = json.loads(out.read_text())["fit"]
    assert fit["poor"].startswith("a poor fit: its held-out service times are off by")


def test_a_good_fit_says_nothing_of_the_kind(cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    result = cli.invoke(app, ["fit", str(gateway_log(tmp_path / "log.parquet", 150)), "--out", str(out)])
    assert result.exit_code == 0 and "poor" not in result.output
    assert "poor" not in json.loads(out.read_text())["fit"]


def test_the_threshold_is_the_held_out_median_or_p90() -> None:
    rng = random.Random(2)
    served = [Served(k * 0.5, k * 0.5, rng.uniform(0.05, 5.0), rng.randint(1, 100), rng.randint(1, 50)) for k in range(60)]
    fitted = fit_engine(served)
    assert fitted.poor is not None and fitted.service_held_out.median is not None
    assert (fitted.service_held_out.median > POOR_MEDIAN) == ("at the median" in fitted.poor)
