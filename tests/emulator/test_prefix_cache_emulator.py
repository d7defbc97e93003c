"""`sfqtui engine`'s prefix cache, asked with the official openai client on loopback: a prompt's
prefill computes only the tokens after its longest held prefix (never its last token, as in
vLLM), answers say usage.prompt_tokens_details.cached_tokens, and /metrics counts vLLM's
prefix-cache queries and hits; with the cache off, nothing is cached and nothing is said."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.engines.model import EngineModel
from sfqtui.emulator.server import EngineServer
from tests.emulator.test_engine_emulator import NAME, client, metrics
from tests.fake_upstream import ServerThread
from tests.proxy_fixtures import KEY_OF, running_proxy, write_keys

HISTORY = "0123456789abcdef" * 40  # 640 characters: 160 tokens, 10 blocks of 16
# A slow prefill and a fast decode, so that what a request computes shows in its model time.
MODEL = EngineModel(prefill_us_per_token=1000.0, decode_ms_per_token=1.0)


@contextlib.contextmanager
def engine(block_tokens: int | None) -> Iterator[ServerThread]:
    with ServerThread(EngineServer(MODEL, NAME, block_tokens)) as server:
        yield server


def model_seconds(url: str) -> float:
    return metrics(url)["sfqtui:request_model_time_seconds_sum"]


def test_a_held_prefix_is_not_computed_again_and_the_answer_says_so() -> None:
    with engine(16) as server:
        api = client(server.url)
        cached, spent = [], []
        for prompt, stream in [(HISTORY, False), (HISTORY + "and one more turn", True), (HISTORY, False), ("x" * 640, False)]:
            before = model_seconds(server.url)
            if stream:
                chunks = list(api.chat.completions.create(model=NAME, messages=[{"role": "user", "content": prompt}], max_tokens=1,
                                                          stream=True, stream_options={"include_usage": True}))
                usage = chunks[-1].usage
            else:
                usage = api.chat.completions.create(model=NAME, messages=[{"role": "user", "content": prompt}], max_tokens=1).usage
            assert usage is not None and usage.prompt_tokens_details is not None
            cached.append(usage.prompt_tokens_details.cached_tokens)
            spent.append(model_seconds(server.url) - before)
        # the whole history held; its repeat finds all but the block of its last token (vLLM recomputes it)
        assert cached == [0, 160, 144, 0]
        prompts = [160, 165, 160, 160]
        for tokens, hit, seconds in zip(prompts, cached, spent, strict=True):  # one step each: decode, and the uncached prefill
            assert seconds == pytest.approx(MODEL.step_s(1, tokens - (hit or 0)))
        seen = metrics(server.url)
        assert seen["vllm:prefix_cache_queries_total"] == sum(prompts)
        assert seen["vllm:prefix_cache_hits_total"] == 160 + 144
        asked = httpx.get(f"{server.url}/metrics", params={"name[]": "vllm:prefix_cache_hits_total"}).text  # as the proxy asks
        assert "vllm:prefix_cache_hits_total{" in asked and "queries" not in asked


def test_without_the_cache_every_prompt_is_computed_whole_and_no_cached_tokens_are_claimed() -> None:
    with engine(None) as server:
        api = client(server.url)
        for _ in range(2):
            before = model_seconds(server.url)
            usage = api.completions.create(model=NAME, prompt=HISTORY, max_tokens=1).usage
            assert usage is not None and usage.prompt_tokens == 160 and usage.prompt_tokens_details is None
            assert model_seconds(server.url) - before == pytest.approx(MODEL.step_s(1, 160))
        seen = metrics(server.url)
        assert seen["vllm:prefix_cache_queries_total"] == seen["vllm:prefix_cache_hits_total"] == 0


def test_the_command_turns_the_cache_off_and_refuses_a_bad_block_size(cli: CliRunner) -> None:
    result = cli.invoke(app, ["engine", "--block-size", "0"])
    assert result.exit_code == 2 and "--block-size 0: must be a whole number of at least 1" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    sfqtui = Path(sys.executable).with_name("sfqtui")
    process = subprocess.Popen([str(sfqtui), "engine", "--port", "0", "--no-enable-prefix-caching"], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.rstrip().endswith("an unbounded queue, no prefix cache)")
        url = re.search(r"http://\S+/v1", line)
        assert url is not None
        answer = httpx.post(f"{url.group(0)}/completions", json={"prompt": HISTORY, "max_tokens": 1}, timeout=10).json()
        assert "prompt_tokens_details" not in answer["usage"]
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_a_proxy_in_front_records_what_the_engine_cached_and_the_blocks_it_named(tmp_path: Path) -> None:
    record = tmp_path / "record.parquet"
    turns = [HISTORY, HISTORY + " the answer, and the next question " * 4]
    with engine(16) as server, running_proxy(server.url, write_keys(tmp_path / "keys.toml"), record=record) as px:
        api = client(px.url, KEY_OF["alice"])
        for prompt in turns:
            assert api.chat.completions.create(model=NAME, messages=[{"role": "user", "content": prompt}], max_tokens=2).choices
    rows = pl.read_parquet(record).sort("arrival_s")
    assert rows["cached_tokens"].to_list() == [0, 160]
    first, second = rows["prefix_blocks"].to_list()
    assert len(first) == 10 and second[:10] == first and len(second) == len(turns[1]) // 64


def test_running_requests_that_share_a_prefix_hold_its_kv_once() -> None:
    with ServerThread(EngineServer(EngineModel(decode_ms_per_token=20.0), NAME, 16)) as server:
        body = {"model": NAME, "prompt": HISTORY, "max_tokens": 5000, "stream": True}
        with httpx.Client(timeout=30) as http, http.stream("POST", f"{server.url}/v1/completions", json=body) as first, \
                http.stream("POST", f"{server.url}/v1/completions", json=body) as second:
            lines = [first.iter_lines(), second.iter_lines()]
            for stream in lines:  # each has generated a token: both prefilled and running
                assert next(stream).startswith("data:")
            seen = metrics(server.url)
            assert seen["vllm:num_requests_running"] == 2
            held = seen["vllm:kv_cache_usage_perc"] * MODEL.kv_tokens
            # the 160 prompt tokens once (twice would be 320 already), and the few tokens each generated so far (20 ms a step)
            assert 160 < held < 320, held
