"""The run of issue 24's acceptance: 'heavy' keeps 16 equal requests going and 'light' 4, through the proxy, in front of
the emulated engine with 6 places, for 25 s; what the engine did, sampled from its scheduler (the servers run in this
process). tests/proxy/test_auto_slots_fairness.py holds it to the issue's numbers; docs/make_slots_picture.py draws it
beside fixed --slots 24."""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import openai

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.limits import LimitSettings
from sfqtui.emulator.server import EngineServer
from tests.fake_upstream import ServerThread
from tests.proxy_fixtures import KEY_OF, openai_http, running_proxy

HEAVY, LIGHT = "bob", "carol"  # both of weight 1 (proxy_fixtures.KEYS)
CLIENTS = {HEAVY: 16, LIGHT: 4}
PLACES = 6
MAX_TOKENS = 24  # about 0.7 s in a full batch of the default engine (20 ms a token, 10% slower per request in the batch)
SAMPLE_S = 0.05
NUMBER = re.compile(r"-(\d+)$")


@dataclass
class Sample:
    t: float  # seconds since the load began
    running: int  # in the engine's batch
    waiting: int  # in the engine's own queue
    queued: int  # in the proxy's users' queues
    slots: int  # the proxy's slots (with --slots auto, the limit's sum)


@dataclass
class SlotsRun:
    slots: str
    samples: list[Sample] = field(default_factory=list)
    starts: list[str] = field(default_factory=list)  # the user of each request the engine started, in start order
    answered: dict[str, int] = field(default_factory=dict)
    failed: int = 0

    @property
    def queue_p90(self) -> int:
        waiting = sorted(s.waiting for s in self.samples)
        return waiting[math.ceil(0.9 * len(waiting)) - 1]

    @property
    def busy(self) -> float:
        """The share of the engine's places busy while the proxy had requests waiting."""
        backlogged = [s.running for s in self.samples if s.queued > 0]
        return sum(backlogged) / (PLACES * len(backlogged)) if backlogged else 0.0

    @property
    def busy_overall(self) -> float:
        """The share of the engine's places busy from its first start on."""
        first = next((k for k, s in enumerate(self.samples) if s.running), len(self.samples))
        running = [s.running for s in self.samples[first:]]
        return sum(running) / (PLACES * len(running)) if running else 0.0

    @property
    def light_share(self) -> float:
        return self.starts.count(LIGHT) / len(self.starts)

    def summary(self) -> str:
        backlogged = (f"{self.busy:.0%} while the proxy had requests waiting" if any(s.queued for s in self.samples)
                      else "the proxy never had requests waiting")
        return (f"--slots {self.slots}: engine queue p90 {self.queue_p90}, places busy {self.busy_overall:.0%} ({backlogged}),"
                f" light {self.light_share:.0%} of {len(self.starts):,} engine starts, answered {sum(self.answered.values()):,}"
                f" ({', '.join(f'{u} {n:,}' for u, n in self.answered.items())}), failed {self.failed}")


async def _clients(url: str, stop: threading.Event, numbers: dict[int, str], run: SlotsRun) -> None:
    async def one(llm: openai.AsyncOpenAI, user: str) -> None:
        while not stop.is_set():
            try:
                answer = await llm.completions.create(model="emulated", prompt="four words of prompt", max_tokens=MAX_TOKENS)
            except openai.APIError:
                run.failed += 1
                continue
            match = NUMBER.search(answer.id)
            if match:
                numbers[int(match.group(1))] = user
            run.answered[user] = run.answered.get(user, 0) + 1

    llms = {user: openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, timeout=60) for user in CLIENTS}
    try:
        await asyncio.gather(*(one(llms[user], user) for user, n in CLIENTS.items() for _ in range(n)))
    finally:
        for llm in llms.values():
            await llm.close()


@contextmanager
def _servers(slots: str, keys: Path) -> Iterator[tuple[ServerThread, ServerThread]]:
    with ServerThread(EngineServer(EngineModel(max_num_seqs=PLACES), "emulated")) as engine:
        settings = {"slots": int(slots)} if slots.isdigit() else {"slots": 2, "limits": LimitSettings()}
        with running_proxy(engine.url, keys, **settings) as proxy:
            yield engine, proxy


def run(slots: str, keys: Path, duration_s: float = 25.0) -> SlotsRun:
    """The load for ``duration_s`` through a proxy with ``--slots slots`` (a number, or auto)."""
    result = SlotsRun(slots)
    numbers: dict[int, str] = {}
    with _servers(slots, keys) as (engine, proxy):
        scheduler = engine.server.engine.scheduler  # type: ignore[attr-defined]  # an EngineServer
        dispatcher = proxy.server.proxy.scheduling.dispatcher  # type: ignore[attr-defined]  # a lone proxy's
        stop = threading.Event()
        load = threading.Thread(target=asyncio.run, args=(_clients(proxy.url, stop, numbers, result),), daemon=True)
        began = time.monotonic()
        load.start()
        while (now := time.monotonic()) < began + duration_s:
            queued = sum(dispatcher.queued(user) for user in CLIENTS)
            result.samples.append(Sample(now - began, len(scheduler.running), len(scheduler.waiting), queued, dispatcher.slots))
            time.sleep(SAMPLE_S)
        order = list(scheduler.admitted_order)  # the starts of the 25 s; what the proxy still held drains after it
        stop.set()
        load.join(timeout=60)
    result.starts = [numbers[n] for n in order if n in numbers]
    return result
