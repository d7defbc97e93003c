"""``--slots auto``'s reading of an engine's /metrics (sfqtui.proxy.limits) against a real endpoint on
loopback: a slow answer never holds the limit up, and what the proxy holds outside the engine counts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sfqtui.core.limits import EngineSignals, LimitSettings
from sfqtui.proxy.limits import UpstreamLimits
from tests.metrics_server import MetricsEndpoint, llama_cpp_text, vllm_text

# What llama-server answered at /metrics with 6 slots at work and 14 requests deferred.
LLAMA_SERVER_METRICS = Path(__file__).resolve().parents[1] / "data" / "llamacpp_metrics.txt"
PATIENCE_S = 30.0  # how long a test waits for what it expects before it fails (never reached when it passes)


@dataclass
class Sent:
    """What the proxy sends the one upstream, as ``upstream.Upstreams`` counts it."""

    inflight: list[int] = field(default_factory=lambda: [0])
    sent: list[int] = field(default_factory=lambda: [0])

    def send(self, n: int) -> None:
        self.inflight[0] += n
        self.sent[0] += n


def limits_of(url: str, settings: LimitSettings, sent: Sent | None = None) -> tuple[UpstreamLimits, list[tuple[int, str]]]:
    """The limits of the one upstream at ``url``, and the changes (limit, reason) they make."""
    changes: list[tuple[int, str]] = []
    return UpstreamLimits([url], ["engine"], settings, "metrics", lambda _index, limit, reason: changes.append((limit, reason)), sent), changes


async def _until(limits: UpstreamLimits, done: Callable[[], bool]) -> None:
    """Run the limits until ``done()``."""
    limits.start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE_S
    try:
        while not done() and loop.time() < deadline:
            await asyncio.sleep(0.01)
    finally:
        await limits.aclose()


def test_a_metrics_endpoint_slower_than_a_scrape_still_moves_the_limit() -> None:
    endpoint = MetricsEndpoint(vllm_text(running=64, waiting=0), delay_s=0.8)  # every request runs, none waits: room
    with endpoint.serve() as server:
        limits, changes = limits_of(server.url, LimitSettings())
        asyncio.run(_until(limits, lambda: bool(changes)))
    assert changes[0] == (4, "room")


def test_a_read_still_under_way_does_not_hold_the_controller_up() -> None:
    endpoint = MetricsEndpoint(vllm_text(running=8, waiting=0))
    endpoint.released.clear()  # the first read hangs until the test lets it answer
    with endpoint.serve() as server:
        limits, changes = limits_of(server.url, LimitSettings(start=8, stall_s=0.3))
        asyncio.run(_until(limits, lambda: bool(changes)))
        asked = endpoint.asked
        endpoint.released.set()
    assert changes[0] == (4, "stale") and asked == 1  # halved while its one read was still unanswered


def test_what_the_proxy_holds_beyond_the_engine_s_running_and_waiting_cuts_the_limit() -> None:
    sent = Sent()
    sent.send(9)  # 9 in flight; the engine runs 5 and queues 1: 3 are held before it
    endpoint = MetricsEndpoint(vllm_text(running=5, waiting=1))
    with endpoint.serve() as server:
        limits, changes = limits_of(server.url, LimitSettings(start=9), sent)
        asyncio.run(_until(limits, lambda: bool(changes)))
        assert limits.signals[0] is not None and limits.signals[0].outside == 3
    assert changes[0] == (6, "queue")  # the engine's size, 5, and the queue target, 1


def test_only_requests_in_flight_a_while_before_a_read_and_throughout_it_count_as_held() -> None:
    sent = Sent()
    sent.send(2)  # just sent when the first read starts: maybe still on their way to the engine
    endpoint = MetricsEndpoint(vllm_text(running=0, waiting=0))
    readings: list[EngineSignals] = []
    with endpoint.serve() as server:
        limits, _ = limits_of(server.url, LimitSettings(start=4), sent)
        held_back: list[int] = []  # a read held back (0), then the readings when it was let go

        def steps() -> bool:
            signals = limits.signals[0]
            if signals is not None and (not readings or signals is not readings[-1]):
                readings.append(signals)
            if not held_back and signals is not None and signals.held == 2:
                held_back.append(0)
                endpoint.released.clear()  # the next read hangs until 3 more are sent
            elif len(held_back) == 1 and endpoint.holding:
                sent.send(3)  # sent while that read is under way: the engine may not have seen them
                held_back.append(len(readings))
                endpoint.released.set()
            return len(held_back) == 2 and len(readings) > held_back[1]

        asyncio.run(_until(limits, steps))
    assert readings[0].held is None  # nothing in flight HELD_AFTER_S before the first read
    assert readings[-1].held == 2  # the 3 sent during the read left out


def test_llama_cpp_s_metrics_are_read_as_an_engine_s() -> None:
    sent = Sent()
    sent.send(6)  # 4 slots at work, 2 deferred: all the proxy sent is in the engine
    endpoint = MetricsEndpoint(llama_cpp_text(processing=4, deferred=2))
    with endpoint.serve() as server:
        limits, changes = limits_of(server.url, LimitSettings(start=6), sent)
        asyncio.run(_until(limits, lambda: bool(changes)))
    signals = limits.signals[0]
    assert signals is not None and (signals.running, signals.waiting, signals.kv_usage, signals.outside) == (4, 2, None, 0)
    assert changes[0] == (5, "queue") and limits.sources == ["metrics"]  # 2 deferred, over the target: 4 slots and 1


def test_what_a_real_llama_server_answered_is_read_as_its_slots_at_work_and_its_deferred_requests() -> None:
    sent = Sent()
    sent.send(20)  # 6 slots at work, 14 deferred (llama.cpp b11434, --parallel 6 --metrics, 20 requests in flight)
    endpoint = MetricsEndpoint(LLAMA_SERVER_METRICS.read_text())
    with endpoint.serve() as server:
        limits, changes = limits_of(server.url, LimitSettings(start=20), sent)
        asyncio.run(_until(limits, lambda: bool(changes)))
    signals = limits.signals[0]
    assert signals is not None and (signals.running, signals.waiting, signals.kv_usage, signals.outside) == (6, 14, None, 0)
    assert changes[0] == (10, "queue")  # halved at most by one reading (the engine's size plus the target would be 7)


def test_llama_cpp_without_its_metrics_is_sized_from_latency() -> None:
    endpoint = MetricsEndpoint("")  # llama-server without --metrics: nothing the proxy reads
    with endpoint.serve() as server:
        limits = UpstreamLimits([server.url], ["engine"], LimitSettings(), "auto", lambda *_: None)
        asyncio.run(_until(limits, lambda: limits.sources[0] != "probing"))
    assert limits.sources == ["latency"]
