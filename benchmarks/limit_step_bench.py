"""How `--slots auto` follows a step: time to settle and overshoot of the proxy's limit, against the emulated engine.

The emulated engine (`sfqtui engine`'s server, 20 ms a token, 10% slower per request in the
batch) and the proxy run in this process, the load (closed-loop clients, 24 tokens a request)
in a thread of its own; the proxy's limit is sampled every 20 ms. Three steps:

- load: 2 clients for 5 s (the limit has no reason to grow), then 24 (engine of 6 places);
- engine up: 24 clients on 6 places, then the engine gets 12 places (a bigger batch fits);
- engine down: then it goes back to 4 places (requests already running finish; no preemption).

For each: the limit before the step and the one it settled at (the medians of the last 3 s
before the step and of its last 3 s), the seconds after the step until it last stood more than 1
away from that, and the overshoot (past the final value, in the step's direction: the highest
after a rise less the final, the final less the lowest after a fall); and the engine's queue at
its 90th percentile once settled. Last, what one read of the engine's metrics costs: the
engine's render of the names asked for, and the proxy's parse (CPU time, the mean of 1,000).

Usage: python benchmarks/limit_step_bench.py
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from sfqtui.core.engines.model import EngineModel  # noqa: E402
from sfqtui.core.limits import LimitSettings  # noqa: E402
from sfqtui.emulator.metrics import EngineMetrics  # noqa: E402
from sfqtui.emulator.scheduler import Scheduler  # noqa: E402
from sfqtui.emulator.server import EngineServer  # noqa: E402
from sfqtui.proxy.engine_metrics import NAMES, signals_of  # noqa: E402
from tests.fake_upstream import ServerThread  # noqa: E402 - the tests' way of running a server in a thread
from tests.proxy_fixtures import KEY_OF, running_proxy, write_keys  # noqa: E402

SAMPLE_S = 0.02


class Load:
    """Closed-loop clients in a thread of their own; ``clients`` may be raised while it runs."""

    def __init__(self, url: str, clients: int) -> None:
        self.url, self.clients, self.stop = url, clients, threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    async def _run(self) -> None:
        async with openai.AsyncOpenAI(base_url=f"{self.url}/v1", api_key=KEY_OF["bob"], max_retries=0, timeout=60) as llm:
            async def one(k: int) -> None:
                while not self.stop.is_set():
                    if k >= self.clients:
                        await asyncio.sleep(0.01)
                        continue
                    await llm.completions.create(model="emulated", prompt="four words of prompt", max_tokens=24)

            await asyncio.gather(*(one(k) for k in range(64)))


def sample(proxy: ServerThread, scheduler: object, seconds: float, into: list[tuple[float, int, int]], began: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        into.append((time.monotonic() - began, proxy.server.proxy.limits.total, len(scheduler.waiting)))  # type: ignore[attr-defined]
        time.sleep(SAMPLE_S)


def report(name: str, samples: list[tuple[float, int, int]], step_t: float) -> None:
    after = [(t, limit, waiting) for t, limit, waiting in samples if t >= step_t]
    before = round(statistics.median(limit for t, limit, _ in samples if step_t - 3 <= t < step_t))
    end = after[-1][0]
    final = round(statistics.median(limit for t, limit, _ in after if t >= end - 3))
    limits = [limit for _, limit, _ in after]
    overshoot = max(limits) - final if final >= before else final - min(limits)
    moved = [t for t, limit, _ in after if abs(limit - final) > 1]
    settle = (max(moved) - step_t) if moved else 0.0
    settled = sorted(w for t, _, w in after if t >= step_t + settle + 0.5) or [0]
    p90 = settled[math.ceil(0.9 * len(settled)) - 1]
    print(f"{name:<15} limit {before:>3} -> {final:>3}  settled in {settle:5.2f} s  overshoot {overshoot:>2}  engine queue p90 after {p90}")


def read_cost() -> None:
    metrics = EngineMetrics("emulated")
    metrics.watch(Scheduler(EngineModel()))
    names = sorted(NAMES)
    text = metrics.render(names).decode()
    whole = metrics.render().decode()
    for what, work in (("the engine's render of the names asked", lambda: metrics.render(names)),
                       ("the proxy's parse", lambda: signals_of(text, 0.0)),
                       ("the proxy's parse of a whole exposition (a server ignoring name[])", lambda: signals_of(whole, 0.0))):
        started = time.process_time()
        for _ in range(1000):
            work()
        print(f"one metrics read: {what}: {(time.process_time() - started) * 1000:.0f} us of CPU")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        keys = write_keys(Path(folder) / "keys.toml")
        model = EngineModel(max_num_seqs=6)
        with ServerThread(EngineServer(model, "emulated")) as engine, running_proxy(engine.url, keys, slots=2, limits=LimitSettings()) as proxy:
            scheduler = engine.server.engine.scheduler  # type: ignore[attr-defined]  # an EngineServer
            load = Load(proxy.url, 2)
            load.thread.start()
            samples: list[tuple[float, int, int]] = []
            began = time.monotonic()
            sample(proxy, scheduler, 5.0, samples, began)
            steps = [("load 2 -> 24", time.monotonic() - began)]
            load.clients = 24
            sample(proxy, scheduler, 8.0, samples, began)
            steps.append(("engine 6 -> 12", time.monotonic() - began))
            scheduler.model = dataclasses.replace(model, max_num_seqs=12)
            sample(proxy, scheduler, 8.0, samples, began)
            steps.append(("engine 12 -> 4", time.monotonic() - began))
            scheduler.model = dataclasses.replace(model, max_num_seqs=4)
            sample(proxy, scheduler, 8.0, samples, began)
            load.stop.set()
            load.thread.join(timeout=60)
    print(f"--slots auto behind the emulated engine; the limit sampled every {SAMPLE_S * 1000:.0f} ms")
    for k, (name, step_t) in enumerate(steps):
        end = steps[k + 1][1] if k + 1 < len(steps) else samples[-1][0] + 1
        report(name, [s for s in samples if s[0] < end], step_t)
    read_cost()


if __name__ == "__main__":
    main()
