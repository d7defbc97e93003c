"""`sfqtui fit` on a gateway's log (a trace whose rows start when the gateway called the
engine) and on input it cannot fit: one line, exit 2."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.engines.model import EngineModel
from sfqtui.trace.write import write_trace
from tests.engine_steps import engine_run, varied_load

ROOT = Path(__file__).resolve().parents[2]
TRUTH = EngineModel(max_num_seqs=4, decode_ms_per_token=15.0, prefill_us_per_token=80.0, batch_slowdown=0.2)


def gateway_log(path: Path, requests: int, truth: EngineModel = TRUTH, longest_prompt: int = 600) -> Path:
    """What `sfqtui import litellm` writes for a gateway whose calls an engine of ``truth``'s parameters served."""
    served = engine_run(truth, varied_load(requests, seed=8, longest_prompt=longest_prompt), ttft=True)
    frame = pl.DataFrame({"request_id": [f"r{k}" for k in range(len(served))], "user": ["u"] * len(served),
                          "arrival_s": [r.arrival_s for r in served], "input_tokens": [r.input_tokens for r in served],
                          "output_tokens": [r.output_tokens for r in served], "service_s": [r.service_s for r in served],
                          "ttft_s": [r.ttft_s for r in served]})
    write_trace(frame, path, {"service": "measured", "source": "litellm"})
    return path


def test_a_gateways_log_is_fitted_with_its_times_to_first_token(cli: CliRunner, tmp_path: Path) -> None:
    result = cli.invoke(app, ["fit", str(gateway_log(tmp_path / "log.parquet", 150))], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "150 requests, sent when they arrived" in result.output and "held out the last 30" in result.output
    assert re.search(r"max_num_seqs[\s│]+4\s", result.output)
    decode = re.search(r"decode_ms_per_token[\s│]+([\d.]+)", result.output)
    assert decode is not None and float(decode.group(1)) == pytest.approx(TRUTH.decode_ms_per_token, rel=0.05)
    assert re.search(r"time to first token, held out[\s│]+30[\s│]+\d+\.\d%", result.output)
    assert re.search(r"arrival to end, held out \(replayed\)[\s│]+30[\s│]+\d+\.\d%", result.output)


def test_a_fitted_context_term_is_shown_and_written(cli: CliRunner, tmp_path: Path) -> None:
    truth = EngineModel(**{**TRUTH.as_dict(), "kv_tokens": 200_000, "context_us_per_token": 10.0})
    log = gateway_log(tmp_path / "log.parquet", 300, truth, longest_prompt=3000)
    result = cli.invoke(app, ["fit", str(log), "--request-overhead-ms", "0", "--out", str(tmp_path / "model.json")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    context = re.search(r"context_us_per_token[\s│]+([\d.]+)", result.output)
    # Its accuracy is tests/core/test_engine_fit.py's; here, that the fit shows and writes what it found.
    assert context is not None and float(context.group(1)) == pytest.approx(truth.context_us_per_token, rel=0.5)
    assert re.search(r"slowed_prefill[\s│]+yes", result.output)
    assert EngineModel.load(tmp_path / "model.json").context_us_per_token == pytest.approx(float(context.group(1)), rel=1e-3)


def refused(cli: CliRunner, *args: str) -> str:
    result = cli.invoke(app, ["fit", *args])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    return result.stderr


def test_what_cannot_be_fitted_is_refused_in_one_line(cli: CliRunner, tmp_path: Path) -> None:
    assert "no service_s column" in refused(cli, str(ROOT / "traces" / "calibration.parquet"))
    assert "no input_tokens column" in refused(cli, str(ROOT / "traces" / "seed-example.parquet"))
    assert "too few requests to fit: 9 requests" in refused(cli, str(gateway_log(tmp_path / "small.parquet", 9)))
    log = tmp_path / "events.parquet"
    assert cli.invoke(app, ["simulate", str(ROOT / "traces" / "seed-example.parquet"), "-o", str(log)]).exit_code == 0
    assert "is an event log" in refused(cli, str(log))
    assert "--max-num-seqs 1: too few places" in refused(cli, str(gateway_log(tmp_path / "busy.parquet", 60)), "--max-num-seqs", "1")
    assert "no such file" in refused(cli, str(tmp_path / "missing.parquet"))


def test_the_bundled_gateway_logs_are_too_small_to_fit(cli: CliRunner, tmp_path: Path) -> None:
    """The repository's real-format gateway logs hold a handful of calls: too few to fit, and said so."""
    trace = tmp_path / "litellm.parquet"
    assert cli.invoke(app, ["import", "litellm", str(ROOT / "tests" / "data" / "gateways" / "litellm_spend_logs.jsonl"),
                            "-o", str(trace)]).exit_code == 0
    assert "too few requests to fit" in refused(cli, str(trace))
