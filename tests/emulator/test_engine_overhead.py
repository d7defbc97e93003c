"""``sfqtui engine --request-overhead-ms``: each request spends that long in the API server before
the engine's queue sees it, outside both of vLLM's gauges (as vLLM's API server holds a request
while it applies the chat template and tokenizes)."""

from __future__ import annotations

import time

from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.protocol import ENGINE_START_HEADER
from tests.emulator.test_engine_emulator import PROMPT, client, metrics, running_engine

OVERHEAD_MS = 400.0


def test_a_request_starts_no_sooner_than_the_overhead_after_it_came_and_its_queue_time_leaves_it_out() -> None:
    with running_engine(request_overhead_ms=OVERHEAD_MS, decode_ms_per_token=5) as server:
        sent_t = time.time()
        answer = client(server.url).chat.completions.with_raw_response.create(
            model="emulated-test", messages=[{"role": "user", "content": PROMPT}], max_tokens=2).http_response
        seen = metrics(server.url)
    started = float(answer.headers[ENGINE_START_HEADER])
    assert started - sent_t >= OVERHEAD_MS / 1e3  # a lower bound: a busy machine only makes it later
    # vLLM's queue time starts when its engine core has the request: alone there, it joined the batch at once.
    assert seen["vllm:request_queue_time_seconds_sum"] < OVERHEAD_MS / 1e3
    assert seen["vllm:e2e_request_latency_seconds_sum"] >= OVERHEAD_MS / 1e3


def test_the_option_is_refused_below_zero(cli: CliRunner) -> None:
    result = cli.invoke(app, ["engine", "--request-overhead-ms", "-5"])
    assert result.exit_code == 2 and "request-overhead-ms" in result.output


def test_fit_refuses_a_negative_overhead_in_one_line(cli: CliRunner) -> None:
    result = cli.invoke(app, ["fit", "no-such.parquet", "--request-overhead-ms", "-5"])
    assert result.exit_code == 2 and "--request-overhead-ms -5: must be a number of at least 0" in result.output
