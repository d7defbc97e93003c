"""`sfqtui check` on a log with start rows: the worst gap at dispatch against the one at engine start."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.numbers import amount
from tests.engine_starts_log import heavy_and_light, with_engine_starts


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


def test_compare_on_the_engine_model_finds_the_engine_queue_undoing_sfq_above_its_places(tmp_path: Path, cli: CliRunner) -> None:
    """'heavy' sends 40 requests at t = 0, 'light' 10 just after, to one engine of 6 places: with
    24 slots SFQ sends heavy's first 24 at once and light waits behind 18 of them in the engine's
    queue; with 6 slots (its places) the engine's queue stays empty and SFQ's order holds."""
    requests = [("heavy", 0.0)] * 40 + [("light", 0.05)] * 10
    trace = tmp_path / "trace.parquet"
    pl.DataFrame({"request_id": [f"r{k:02d}" for k in range(len(requests))], "user": [u for u, _ in requests],
                  "arrival_s": [t for _, t in requests], "input_tokens": [16] * len(requests), "max_tokens": [20] * len(requests),
                  "output_tokens": [20] * len(requests)}).write_parquet(trace)
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"max_num_seqs": 6, "decode_ms_per_token": 20}))
    figures = {}
    for slots in (24, 6):
        result = cli.invoke(app, ["compare", str(trace), "--schedulers", "sfq", "--engine-model", str(model), "--slots", str(slots), "--json"])
        assert result.exit_code == 0, result.output
        figures[slots] = json.loads(result.output)["schedulers"]["sfq"]
    above, at = figures[24], figures[6]
    assert above["worst_gap"]["gap"] == at["worst_gap"]["gap"] == at["at_engine_start"]["worst_gap"]["gap"]  # one c_max
    started = above["at_engine_start"]
    assert started["worst_gap"]["gap"] >= 15 * above["worst_gap"]["gap"] and started["worst_gap"]["ahead"] == "heavy"
    assert started["users"]["light"]["started"] == 10 and started["out_of_dispatch_order"]["pairs"] == 0  # FCFS: the order is kept
    result = cli.invoke(app, ["compare", str(trace), "--schedulers", "sfq", "--engine-model", str(model), "--slots", "24"])
    assert f"at engine start {amount(started['worst_gap']['gap'])} (heavy over light" in " ".join(result.output.split()), result.output
