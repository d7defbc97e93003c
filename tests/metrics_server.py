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
    """``text`` served at /metrics after ``delay_s``, and only once ``released`` is set; ``asked`` counts the reads."""

    def __init__(self, text: str, delay_s: float = 0.0) -> None:
        self.text = text
        self.delay_s = delay_s
        self.released = threading.Event()
        self.released.set()
        self.asked = 0
        self.app = Starlette(routes=[Route("/metrics", self.metrics)])

    async def metrics(self, _request: Request) -> PlainTextResponse:
        self.asked += 1
        await asyncio.sleep(self.delay_s)
        while not self.released.is_set():
            await asyncio.sleep(0.01)
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
