"""``--slots auto``: each upstream's concurrency limit, kept by a controller (``sfqtui.core.limits``) fed off the request path.

Where an upstream exports vLLM's, SGLang's or llama.cpp's metrics, a task of its own reads its /metrics
every ``SCRAPE_S`` (aiohttp, as the upstream requests; parsed by prometheus_client: ``engine_metrics``),
keeping the last reading, and another feeds every controller the last reading every ``SCRAPE_S``:
requests never wait on a read, and neither does the limit. A /metrics that answers slowly
(vLLM's took over a second on a busy CPU) only makes the reading older, which the controller
handles as any stale reading (it holds the limit, then cuts it). Each reading carries what
the proxy had in flight at the upstream throughout it, so that the controller counts what
the upstream holds outside its engine (``EngineSignals.outside``). One that exports none (its
/metrics answers without them) is sized from latency instead: each answered request's time
per output token feeds the controller's gradient. Each upstream has its own controller, so
one upstream's failure shrinks only its own limit; the proxy's slots are the limits' sum.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

import aiohttp

from sfqtui.core.limits import EngineSignals, LimitController, LimitSettings
from sfqtui.core.limits.slots import HELD_AFTER_S, SCRAPE_S
from sfqtui.errors import InputError
from sfqtui.protocol import UpstreamLimit
from sfqtui.proxy.engine_metrics import QUERY, signals_of
from sfqtui.proxy.upstream import FAILURES, upstream_session

log = logging.getLogger("sfqtui.proxy")
# A read this slow gives up and the next starts. It holds nothing up meanwhile: the controller
# goes on with the last reading, stale and so saturated after LimitSettings.stale_s.
SCRAPE_TIMEOUT_S = 10.0
METRICS, LATENCY, PROBING = "metrics", "latency", "probing"
# Changed: (upstream index, new limit, reason).
Changed = Callable[[int, int, str], None]


def check_metrics(bases: Sequence[str], timeout_s: float = 5.0) -> None:
    """``--limit-from metrics``: InputError unless every upstream's /metrics has an engine's signals."""
    asyncio.run(_check_metrics(bases, timeout_s))


async def _check_metrics(bases: Sequence[str], timeout_s: float) -> None:
    async with _session(timeout_s) as session:
        for base in bases:
            try:
                async with session.get(f"{base}/metrics", params=QUERY) as response:
                    status, text = response.status, await response.text()
            except FAILURES as exc:
                raise InputError(f"--limit-from metrics: cannot read {base}/metrics ({type(exc).__name__})") from None
            if status != 200 or signals_of(text, 0.0) is None:
                raise InputError(f"--limit-from metrics: {base}/metrics exports none of vLLM's, SGLang's or llama.cpp's engine "
                                 f"metrics (vllm:num_requests_waiting, sglang:num_queue_reqs, llamacpp:requests_deferred, ...; "
                                 f"llama-server needs --metrics); use --limit-from latency or auto")


def _session(timeout_s: float) -> aiohttp.ClientSession:
    return upstream_session(aiohttp.ClientTimeout(total=timeout_s))


class Traffic(Protocol):
    """What the proxy sends each upstream (``upstream.Upstreams``): requests in flight now, and sent so far."""

    inflight: list[int]
    sent: list[int]


class UpstreamLimits:
    """One controller per upstream, the tasks that read their metrics and the task that feeds
    the controllers; ``traffic``: what the proxy has in flight at each (None: not counted)."""

    def __init__(self, bases: Sequence[str], labels: Sequence[str], settings: LimitSettings, source: str, changed: Changed,
                 traffic: Traffic | None = None) -> None:
        now = time.monotonic()
        self.bases, self.labels, self.settings, self.source = list(bases), list(labels), settings, source
        self.controllers = [LimitController(settings, now) for _ in bases]
        self.sources = [LATENCY if source == LATENCY else METRICS if source == METRICS else PROBING for _ in bases]
        self.signals: list[EngineSignals | None] = [None for _ in bases]
        self._traffic = traffic
        self._changed = changed
        self._tasks: list[asyncio.Task[None]] = []
        self._session: aiohttp.ClientSession | None = None

    @property
    def total(self) -> int:
        return sum(c.limit for c in self.controllers)

    def limit_of(self, index: int) -> int:
        return self.controllers[index].limit

    def start(self) -> None:
        self._session = _session(SCRAPE_TIMEOUT_S)
        self._tasks = [asyncio.create_task(self._read(k)) for k, source in enumerate(self.sources) if source != LATENCY]
        if self._tasks:
            self._tasks.append(asyncio.create_task(self._feed()))

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    def _moved(self, index: int, before: int) -> None:
        controller = self.controllers[index]
        if controller.limit != before:
            self._changed(index, controller.limit, controller.reason)

    async def _feed(self) -> None:
        """Every SCRAPE_S, each upstream read from metrics (or still probed) gets its last reading, however old."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            now = time.monotonic()
            for index, source in enumerate(self.sources):
                if source != LATENCY:
                    # Until it answers (probing), an upstream is an engine whose metrics are stale: its limit holds, then shrinks.
                    before = self.controllers[index].limit
                    self.controllers[index].observe_metrics(now, self.signals[index])
                    self._moved(index, before)
            due = max(due + SCRAPE_S, loop.time())
            await asyncio.sleep(due - loop.time())

    def _held_since(self, index: int, sent: int | None) -> int | None:
        """What was in flight at the upstream when ``sent`` requests had been sent to it and still is:
        in flight now less what was sent since (one sent and answered since is left out)."""
        traffic = self._traffic
        if traffic is None or sent is None:
            return None
        return max(0, traffic.inflight[index] - (traffic.sent[index] - sent))

    async def _read(self, index: int) -> None:
        """Read one upstream's metrics every SCRAPE_S (from the start of the last read; at once after a
        slow one) until cancelled, keeping the last reading."""
        session = self._session
        assert session is not None
        loop = asyncio.get_running_loop()
        url = f"{self.bases[index]}/metrics"
        due = loop.time()
        traffic = self._traffic
        counts: deque[tuple[float, int]] = deque()  # (loop time, requests sent so far) at each read's start
        while True:
            answered, signals = False, None
            sent = None
            if traffic is not None:
                # Held: sent HELD_AFTER_S or more before this read started, and still in flight when it answered.
                start = loop.time()
                counts.append((start, traffic.sent[index]))
                while len(counts) > 1 and counts[1][0] <= start - HELD_AFTER_S:
                    counts.popleft()
                if counts[0][0] <= start - HELD_AFTER_S:
                    sent = counts[0][1]
            try:
                async with session.get(url, params=QUERY) as response:
                    status, text = response.status, await response.text()
                answered = True
                if status == 200:
                    # Stamped when read: a proxy busy enough to read it late has not made the engine's word older.
                    signals = signals_of(text, time.monotonic())
            except FAILURES:
                pass
            if self.sources[index] == PROBING and answered:
                if signals is None:
                    self.sources[index] = LATENCY
                    log.info("upstream %s exports no engine metrics: its limit follows latency", self.labels[index])
                    return
                self.sources[index] = METRICS
            if signals is not None:
                self.signals[index] = replace(signals, held=self._held_since(index, sent))
            due = max(due + SCRAPE_S, loop.time())
            await asyncio.sleep(due - loop.time())

    def latency(self, index: int, latency_s: float, inflight: int) -> None:
        """An answered request's time per output token, and the upstream's requests in flight then."""
        if self.sources[index] == LATENCY:
            before = self.controllers[index].limit
            self.controllers[index].observe_latency(time.monotonic(), latency_s, inflight)
            self._moved(index, before)

    def backoff(self, index: int) -> None:
        """The upstream answered 503: its queue is full."""
        before = self.controllers[index].limit
        self.controllers[index].backoff(time.monotonic())
        self._moved(index, before)

    def state(self) -> list[UpstreamLimit]:
        rows: list[UpstreamLimit] = []
        for label, controller, source, signals in zip(self.labels, self.controllers, self.sources, self.signals, strict=True):
            rows.append({"upstream": label, "limit": controller.limit, "maximum": self.settings.maximum, "source": source,
                         "reason": controller.reason, "running": None if signals is None else signals.running,
                         "waiting": None if signals is None else signals.waiting,
                         "kv_usage": None if signals is None else signals.kv_usage})
        return rows
