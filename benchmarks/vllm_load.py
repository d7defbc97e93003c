"""Closed-loop load on an OpenAI-compatible engine, its /metrics sampled meanwhile, and what they add up to.

Each worker sends one streamed chat completion after another, all of the same prompt and
length (`ignore_eos`, so a random model does not stop early), for a fixed time. A request's
first byte is its first SSE chunk: vLLM and llama.cpp's llama-server send it after the
request's prefill step, the emulator after its first step, so it stands for the time the
engine started the request plus one step. Each request carries a tag of its own in the class
header, which SFQ does not read and a proxy's recording keeps (benchmarks/vllm_starts.py joins
the two). A sampler reads the engine's gauges (and the proxy's queue, when there is one) every
SAMPLE_S. Pure functions below turn these into the benchmark's figures.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from prometheus_client.parser import text_string_to_metric_families

from sfqtui.proxy.attributes import CLASS_HEADER

SAMPLE_S = 0.1
RUNNING, WAITING, PROXY_QUEUED, PROXY_LIMIT = "vllm:num_requests_running", "vllm:num_requests_waiting", "sfqtui_queued", "sfqtui_upstream_limit"
# llama-server's (--metrics): its slots at work, and the requests waiting for a slot.
LLAMACPP_RUNNING, LLAMACPP_WAITING = "llamacpp:requests_processing", "llamacpp:requests_deferred"


@dataclass(frozen=True)
class Done:
    """One request that was answered: who sent it, and when (seconds on the load's clock)."""

    user: str
    sent: float
    first: float  # the first chunk
    end: float
    prompt_tokens: int
    output_tokens: int
    tag: str = ""  # its class header
    # vLLM's per-request metrics (--enable-per-request-metrics) where it sent them, in seconds: its engine core's queue
    # (queued to scheduled), scheduled to first token, first token to last
    engine_queue: float | None = None
    engine_ttft: float | None = None
    engine_generation: float | None = None


@dataclass(frozen=True)
class Sample:
    t: float
    running: float
    waiting: float
    proxy_queued: float | None = None
    proxy_limit: float | None = None  # the proxy's limit for the engine (sfqtui_upstream_limit; --slots auto moves it)
    scrape_s: float = 0.0  # how long the engine's /metrics took to answer


def gauges(text: str) -> dict[str, float]:
    """The Prometheus text's samples by name, summed over their labels (one engine, one proxy)."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[sample.name] = values.get(sample.name, 0.0) + sample.value
    return values


def running_and_waiting(values: dict[str, float]) -> tuple[float, float]:
    """The engine's requests running and waiting, under vLLM's names or llama.cpp's."""
    for running, waiting in ((RUNNING, WAITING), (LLAMACPP_RUNNING, LLAMACPP_WAITING)):
        if running in values:
            return values[running], values[waiting]
    raise RuntimeError(f"the engine's /metrics has neither {RUNNING} nor {LLAMACPP_RUNNING} (llama-server needs --metrics)")


def chat_body(model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True}


@dataclass
class Load:
    """What a closed loop saw: the answered requests, every first byte (answered or not) and the samples."""

    done: list[Done] = field(default_factory=list)
    starts: list[tuple[str, float]] = field(default_factory=list)  # (user, first byte)
    samples: list[Sample] = field(default_factory=list)
    sending: list[float] = field(default_factory=list)  # when each request still unanswered was sent
    first_tokens: dict[str, tuple[float, float]] = field(default_factory=dict)  # tag -> (sent, first byte), answered or not
    # tag -> the engine's own time from starting the request to its first token, where it said (vLLM's per-request
    # metrics: time_to_first_token_ms, from its scheduling; with --enable-per-request-metrics, on the last chunk)
    engine_ttft: dict[str, float] = field(default_factory=dict)
    numbers: Iterator[int] = field(default_factory=itertools.count)  # of the tags


async def _ask(client: httpx.AsyncClient, url: str, key: str, user: str, body: dict[str, Any], clock: float, load: Load) -> Done:
    sent = time.monotonic() - clock
    load.sending.append(sent)
    try:
        return await _answer(client, url, key, user, body, clock, load, sent)
    finally:
        load.sending.remove(sent)


async def _answer(client: httpx.AsyncClient, url: str, key: str, user: str, body: dict[str, Any], clock: float, load: Load, sent: float) -> Done:
    first: float | None = None
    usage: dict[str, int] = {}
    metrics: dict[str, float | None] = {}
    tag = f"{user}-{next(load.numbers)}"
    headers = {"authorization": f"Bearer {key}", CLASS_HEADER: tag}
    async with aconnect_sse(client, "POST", f"{url}/v1/chat/completions", json=body, headers=headers) as source:
        source.response.raise_for_status()
        async for event in source.aiter_sse():
            if event.data == "[DONE]":
                break
            chunk = event.json()
            if first is None and chunk.get("choices"):
                first = time.monotonic() - clock
                load.starts.append((user, first))
                load.first_tokens[tag] = (sent, first)
            usage = chunk.get("usage") or usage
            metrics = chunk.get("metrics") or metrics
    if first is None or not usage:
        raise RuntimeError(f"an answer without a token or without usage: {usage}")
    seconds = {key: None if (ms := metrics.get(f"{key}_ms")) is None else ms / 1e3 for key in ("queue_time", "time_to_first_token", "generation_time")}
    if seconds["time_to_first_token"] is not None:
        load.engine_ttft[tag] = seconds["time_to_first_token"]
    return Done(user, sent, first, time.monotonic() - clock, usage["prompt_tokens"], usage["completion_tokens"], tag,
                seconds["queue_time"], seconds["time_to_first_token"], seconds["generation_time"])


async def _sampler(client: httpx.AsyncClient, engine: str, proxy: str | None, clock: float, into: list[Sample]) -> None:
    while True:
        t = time.monotonic() - clock
        running, waiting = running_and_waiting(gauges((await client.get(f"{engine}/metrics")).text))
        scrape_s = time.monotonic() - clock - t
        ours = gauges((await client.get(f"{proxy}/metrics")).text) if proxy else {}
        into.append(Sample(t, running, waiting, ours.get(PROXY_QUEUED), ours.get(PROXY_LIMIT), scrape_s))
        await asyncio.sleep(max(0.0, SAMPLE_S - (time.monotonic() - clock - t)))


async def closed_loop(url: str, workers: dict[str, tuple[str, int]], body: dict[str, Any], duration_s: float,
                      engine: str, proxy: str | None = None, settle_s: float = 0.0) -> Load:
    """``workers``: API key -> (user, workers of that user), each sending to ``url`` back to back for ``duration_s``.

    With ``settle_s``, the load goes on past ``duration_s`` until the requests sent before
    it are answered, at most ``settle_s`` more, so that a long wait under many clients is
    measured under the same load. Requests still running at the end are dropped (their
    connections closed, which aborts them in the engine). ``engine`` (and ``proxy``) are
    sampled meanwhile.
    """
    load = Load()
    count = sum(n for _, n in workers.values())
    limits = httpx.Limits(max_connections=count + 2, max_keepalive_connections=count + 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600, connect=10), limits=limits) as client, \
            httpx.AsyncClient(timeout=10) as watcher:
        clock = time.monotonic()

        async def work(key: str, user: str) -> None:
            while True:
                load.done.append(await _ask(client, url, key, user, body, clock, load))

        sampler = asyncio.create_task(_sampler(watcher, engine, proxy, clock, load.samples))
        tasks = [asyncio.create_task(work(key, user)) for key, (user, n) in workers.items() for _ in range(n)]
        finished, _ = await asyncio.wait([*tasks, sampler], timeout=duration_s, return_when=asyncio.FIRST_EXCEPTION)
        settled = time.monotonic() + settle_s
        while not finished and time.monotonic() < settled and any(sent <= duration_s for sent in load.sending):
            finished, _ = await asyncio.wait([*tasks, sampler], timeout=SAMPLE_S, return_when=asyncio.FIRST_EXCEPTION)
        for task in [*tasks, sampler]:
            task.cancel()
        await asyncio.gather(*tasks, sampler, return_exceptions=True)
        for task in finished:
            task.result()  # a worker or the sampler that failed: its error
    return load


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile (inclusive method: a single value is every percentile of itself)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def curve_point(clients: int, done: list[Done], samples: list[Sample], warmup_s: float, duration_s: float) -> dict[str, Any]:
    """Throughput, TTFT and end-to-end latency (p50, p90) and the engine's mean gauges, past the warm-up.

    Latencies are of the requests sent between the warm-up and ``duration_s``; throughput
    and gauges are over that window.
    """
    kept = [d for d in done if warmup_s <= d.sent <= duration_s]
    if not kept:
        raise RuntimeError(f"{clients} clients: no request both sent after the warm-up and answered; lengthen the run")
    window = duration_s - warmup_s
    ended = [d for d in done if warmup_s <= d.end <= duration_s]
    seen = [s for s in samples if warmup_s <= s.t <= duration_s]
    ttft = [d.first - d.sent for d in kept]
    e2e = [d.end - d.sent for d in kept]
    between = [(d.end - d.first) / (d.output_tokens - 1) for d in kept if d.output_tokens > 1]
    return {"clients": clients, "requests": len(kept), "throughput_rps": len(ended) / window,
            "prompt_tokens": kept[0].prompt_tokens, "output_tokens": kept[0].output_tokens,
            "ttft_p50": percentile(ttft, 50), "ttft_p90": percentile(ttft, 90), "e2e_p50": percentile(e2e, 50), "e2e_p90": percentile(e2e, 90),
            "itl_mean": statistics.fmean(between) if between else None,
            "running_mean": statistics.fmean(s.running for s in seen), "waiting_mean": statistics.fmean(s.waiting for s in seen)}


def slot_figures(starts: list[tuple[str, float]], samples: list[Sample], max_num_seqs: int, light: str) -> dict[str, Any]:
    """The slot benchmark's figures: the engine's queue p90, its places busy, and ``light``'s share of the starts.

    A start is a request's first byte (the engine started it one step before). Busy is the
    mean of running over max_num_seqs, over all samples and over those where the proxy had
    requests waiting (None when it never had). The proxy's limit for the engine and the time
    the engine's /metrics took to answer are there to explain what a controller did.
    """
    users = [user for user, _ in starts]
    waiting_proxy = [s for s in samples if s.proxy_queued]
    return {"requests_started": len(users), "light_share": users.count(light) / len(users) if users else None,
            "engine_queue_p90": percentile([s.waiting for s in samples], 90),
            "engine_running_mean": statistics.fmean(s.running for s in samples),
            "busy": statistics.fmean(s.running for s in samples) / max_num_seqs,
            "busy_while_proxy_waits": statistics.fmean(s.running for s in waiting_proxy) / max_num_seqs if waiting_proxy else None,
            "proxy_waiting_share": len(waiting_proxy) / len(samples),
            "proxy_limit_mean": statistics.fmean(limits) if (limits := [s.proxy_limit for s in samples if s.proxy_limit is not None]) else None,
            "engine_scrape_p90_s": percentile([s.scrape_s for s in samples], 90)}
