"""A real /metrics endpoint on loopback whose text, pace and holding the tests set: an engine's
Prometheus exposition served slowly, or held until released (vLLM's took over a second to
answer on a busy CPU)."""

from __future__ import annotations

import asyncio
import threading

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.fake_upstream import ServerThread


class MetricsEndpoint:
    """``text`` served at /metrics after ``delay_s``, and only once ``released`` is set; ``asked`` counts the reads,
    ``holding`` those waiting for ``released``."""

    def __init__(self, text: str, delay_s: float = 0.0) -> None:
        self.text = text
        self.delay_s = delay_s
        self.released = threading.Event()
        self.released.set()
        self.asked = 0
        self.holding = 0  # reads held until released
        self.app = Starlette(routes=[Route("/metrics", self.metrics)])

    async def metrics(self, _request: Request) -> PlainTextResponse:
        self.asked += 1
        await asyncio.sleep(self.delay_s)
        if not self.released.is_set():
            self.holding += 1
            while not self.released.is_set():
                await asyncio.sleep(0.01)
            self.holding -= 1
        return PlainTextResponse(self.text, media_type="text/plain; version=0.0.4")

    def serve(self) -> ServerThread:
        return ServerThread(uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")))


def vllm_text(running: int, waiting: int, kv: float = 0.1) -> str:
    """vLLM's three gauges as its /metrics writes them."""
    lines = []
    for name, value in (("num_requests_running", running), ("num_requests_waiting", waiting), ("kv_cache_usage_perc", kv)):
        lines += [f"# HELP vllm:{name} {name}.", f"# TYPE vllm:{name} gauge",
                  f'vllm:{name}{{engine="0",model_name="m"}} {float(value)}']
    return "\n".join(lines) + "\n"


def llama_cpp_text(processing: int, deferred: int) -> str:
    """The exposition of llama.cpp's llama-server with --metrics (tools/server/README.md, "GET /metrics"):
    unlabelled samples, counters and gauges beside the two read here, whatever name[] asked for."""
    families = (("prompt_tokens_total", "counter", "Number of prompt tokens processed.", 33065),
                ("prompt_seconds_total", "counter", "Prompt process time in seconds.", 235.743),
                ("tokens_predicted_total", "counter", "Number of generation tokens processed.", 7801),
                ("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.", 31.2),
                ("requests_processing", "gauge", "Number of requests processing.", processing),
                ("requests_deferred", "gauge", "Number of requests deferred.", deferred),
                ("n_decode_total", "counter", "Total Number of llama_decode() calls.", 9030),
                ("n_busy_slots_per_decode", "gauge", "Average number of busy slots per llama_decode() call.", 3.87))
    lines = []
    for name, kind, help_text, value in families:
        lines += [f"# HELP llamacpp:{name} {help_text}", f"# TYPE llamacpp:{name} {kind}", f"llamacpp:{name} {value}"]
    return "\n".join(lines) + "\n"
