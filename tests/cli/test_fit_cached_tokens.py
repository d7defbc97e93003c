"""Fitting the engine model to an engine with a prefix cache: a request's prefill counts only
the prompt tokens its cache did not hold, so the fit finds the prefill time per computed token;
a fit blind to the cache mistakes the cached tokens for computed ones."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.engine_fit.fit import fit_engine
from sfqtui.core.engines.model import EngineModel
from tests.engine_steps import engine_run, varied_load

TRUTH = EngineModel(max_num_seqs=6, decode_ms_per_token=20.0, prefill_us_per_token=200.0, batch_slowdown=0.1)


def test_the_fit_counts_only_uncached_prompt_tokens_as_prefilled() -> None:
    rng = random.Random(8)
    sent = varied_load(400, seed=3)
    held = [rng.choice([0, rng.randint(500, 4000)]) for _ in sent]  # half the prompts resend a long history the engine holds
    # The engine computes the uncached tokens; the recording says the whole prompt and what was cached.
    computed = engine_run(TRUTH, sent)
    served = [dataclasses.replace(r, input_tokens=r.input_tokens + cached, cached_tokens=cached) for r, cached in zip(computed, held)]
    fitted = fit_engine(served, places=TRUTH.max_num_seqs)
    assert fitted.model.prefill_us_per_token == pytest.approx(TRUTH.prefill_us_per_token, rel=0.25)
    assert fitted.service_held_out.median is not None and fitted.service_held_out.median < 0.03
    blind = fit_engine([dataclasses.replace(r, cached_tokens=0) for r in served], places=TRUTH.max_num_seqs)
    assert blind.service_held_out.median is not None and blind.service_held_out.median > 2 * fitted.service_held_out.median
    assert abs(blind.model.prefill_us_per_token - TRUTH.prefill_us_per_token) > 0.25 * TRUTH.prefill_us_per_token


def test_the_command_says_what_the_cache_held(cli: CliRunner, tmp_path: Path) -> None:
    sent = varied_load(60, seed=4)
    served = engine_run(TRUTH, sent)
    held = [0 if k % 2 else 1000 for k in range(len(sent))]
    trace = pl.DataFrame({"request_id": [f"r{k}" for k in range(len(sent))], "user": ["u"] * len(sent),
                          "arrival_s": [r.arrival_s for r in served], "input_tokens": [r.input_tokens + c for r, c in zip(served, held)],
                          "output_tokens": [r.output_tokens for r in served], "service_s": [r.service_s for r in served],
                          "cached_tokens": held})
    trace.write_parquet(tmp_path / "trace.parquet")
    out = tmp_path / "model.json"
    result = cli.invoke(app, ["fit", str(tmp_path / "trace.parquet"), "--max-num-seqs", "6", "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    said = f"prefill counts uncached tokens only: 60 requests said what the prefix cache held, 30,000 of {sum(trace['input_tokens']):,}"
    assert said in " ".join(result.output.split())
    fit = json.loads(out.read_text())["fit"]
    assert fit["cached"].startswith(said)
    # the replay of the waits prefills the uncached tokens too: the 1,000 held tokens would add 0.2 s to every other request
    assert fit["held_out_error"]["latency_s"]["median"] < 0.05, fit
