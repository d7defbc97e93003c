"""The slot controller (sfqtui.core.limits) in closed loop with a simulated engine: places, a FCFS queue, metrics scraped on a clock."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import pytest

from sfqtui.core.limits import EngineSignals, LimitController, LimitSettings, saturation
from sfqtui.errors import InputError

STEP_S = 0.01
SCRAPE_S = 0.05


@dataclass
class Engine:
    """Continuous batching in 10 ms steps: ``places`` run at once for ``service_s`` each; the rest wait, first come first served."""

    places: int
    service_s: float = 0.5
    running: list[float] = field(default_factory=list)  # when each running request ends
    waiting: deque[int] = field(default_factory=deque)
    started: int = 0

    def arrive(self, now: float) -> None:
        self.waiting.append(0)  # reaches the engine's queue at its next step

    def step(self, now: float) -> int:
        """Advance to ``now``: the requests that ended (each frees a proxy slot)."""
        self.admit(now)
        ended = sum(1 for end in self.running if end <= now)
        self.running = [end for end in self.running if end > now]
        while self.waiting and len(self.running) < self.places:
            self.waiting.popleft()
            self.running.append(now + self.service_s)
            self.started += 1
        return ended

    def admit(self, now: float) -> None:
        """Requests reach the engine's queue (at once: no API server in front of it)."""


@dataclass
class Loop:
    """A proxy with ``demand`` requests always wanting to run, a limit from the controller, and the engine behind it."""

    engine: Engine
    controller: LimitController
    demand: int
    now: float = 0.0
    inflight: int = 0
    limits: list[tuple[float, int]] = field(default_factory=list)
    queues: list[tuple[float, int]] = field(default_factory=list)
    held: bool = False  # the readings carry what the proxy has in flight (as sfqtui proxy's do)

    def run(self, until: float, scrape: bool = True) -> None:
        next_scrape = self.now
        while self.now < until:
            self.now = round(self.now + STEP_S, 6)
            self.inflight -= self.engine.step(self.now)
            if scrape and self.now >= next_scrape:
                next_scrape += SCRAPE_S
                signals = EngineSignals(self.now, len(self.engine.running), len(self.engine.waiting), None,
                                        self.inflight if self.held else None)
                self.controller.observe_metrics(self.now + 0.002, signals)
            elif not scrape:
                self.controller.observe_metrics(self.now, None)
            while self.inflight < min(self.demand, self.controller.limit):
                self.inflight += 1
                self.engine.arrive(self.now)
            self.limits.append((self.now, self.controller.limit))
            self.queues.append((self.now, len(self.engine.waiting)))


def settled(limits: list[tuple[float, int]], after: float) -> tuple[float, int, int]:
    """(seconds from ``after`` until the limit last moved by more than 1 from its final value, the final value, the highest after ``after``)."""
    final = limits[-1][1]
    moved = [t for t, limit in limits if t >= after and abs(limit - final) > 1]
    return (max(moved) - after if moved else 0.0), final, max(limit for t, limit in limits if t >= after)


def p90(values: list[int]) -> int:
    return sorted(values)[math.ceil(0.9 * len(values)) - 1]


def test_a_heavy_load_settles_one_over_the_engine_s_places_with_its_queue_near_empty() -> None:
    loop = Loop(Engine(places=6), LimitController(LimitSettings()), demand=40)
    loop.run(10.0)
    settle_s, final, highest = settled(loop.limits, 0.0)
    assert final == 7 and settle_s < 1.0 and highest <= 8  # slow start: 2, 4, 8, then cut to 6 running + 1
    assert p90([q for t, q in loop.queues if t > 1.0]) <= 1
    assert loop.engine.started * loop.engine.service_s / (6 * 10.0) > 0.9  # the places' busy share


def test_the_limit_follows_a_step_in_the_engine_s_size_both_ways() -> None:
    loop = Loop(Engine(places=6), LimitController(LimitSettings()), demand=60)
    loop.run(5.0)
    loop.engine.places = 12
    loop.run(10.0)
    settle_s, final, highest = settled(loop.limits, 5.0)
    assert final == 13 and settle_s < 1.5 and highest <= final + 1  # one by one after the first cut: no overshoot
    loop.engine.places = 4
    loop.run(15.0)
    settle_s, final, _ = settled(loop.limits, 10.0)
    # Cut to the engine's size plus one once its larger size is a second old (size_s): the engine's queue drains as its requests end.
    assert final == 5 and settle_s < 1.5
    assert p90([q for t, q in loop.queues if t > 12.5]) <= 1


def test_a_light_load_does_not_grow_the_limit() -> None:
    loop = Loop(Engine(places=6), LimitController(LimitSettings()), demand=2)
    loop.run(5.0)
    assert {limit for _, limit in loop.limits} == {2, 4}  # grown once while both ran, then never: 2 never fill 4


def test_the_limit_never_passes_the_maximum_and_says_so() -> None:
    loop = Loop(Engine(places=20), LimitController(LimitSettings(maximum=5)), demand=40)
    loop.run(3.0)
    assert max(limit for _, limit in loop.limits) == 5 and loop.controller.reason == "maximum"


def test_stale_metrics_hold_the_limit_then_halve_it() -> None:
    controller = LimitController(LimitSettings(start=16))
    fresh = EngineSignals(0.0, 16, 1, 0.2)
    assert controller.observe_metrics(0.05, fresh) == 16
    assert controller.observe_metrics(0.3, fresh) == 16  # stale (0.3 s old): saturated, held
    assert controller.observe_metrics(3.0, None) == 16
    assert controller.observe_metrics(3.35, None) == 8 and controller.reason == "stale"  # stale for stall_s (3 s)
    assert controller.observe_metrics(6.0, None) == 8
    assert controller.observe_metrics(6.4, None) == 4
    assert controller.observe_metrics(6.45, EngineSignals(6.44, 4, 0, 0.1)) == 4  # fresh again, but the cut is 50 ms old
    assert controller.observe_metrics(6.6, EngineSignals(6.59, 4, 0, 0.1)) == 5 and controller.reason == "room"  # by one, after a cut


def test_a_failing_upstream_shrinks_only_its_own_limit() -> None:
    ok, failing = LimitController(LimitSettings(start=8)), LimitController(LimitSettings(start=8))
    for k in range(400):
        now = k * SCRAPE_S
        ok.observe_metrics(now, EngineSignals(now, 7, 1, 0.3))
        failing.observe_metrics(now, None)
    assert (ok.limit, failing.limit) == (8, 1)


def test_kv_over_the_threshold_holds_the_limit_at_what_runs() -> None:
    controller = LimitController(LimitSettings(start=10))
    assert controller.observe_metrics(0.0, EngineSignals(0.0, 7, 0, 0.9)) == 7 and controller.reason == "kv"
    assert controller.observe_metrics(0.5, EngineSignals(0.5, 7, 0, 0.9)) == 7  # the same reading: the same target, not a second cut
    assert saturation(EngineSignals(0.0, 7, 0, 0.9), LimitSettings()) == pytest.approx(0.9 / 0.8)
    assert saturation(EngineSignals(0.0, 7, 3, 0.1), LimitSettings()) == 3


def test_a_503_halves_the_limit_once_per_burst() -> None:
    controller = LimitController(LimitSettings(start=16))
    assert controller.backoff(1.0) == 8 and controller.reason == "backoff"
    assert controller.backoff(1.01) == 8 and controller.backoff(1.05) == 8
    assert controller.backoff(1.2) == 4
    for _ in range(5):
        controller.backoff(9.0 + _)
    assert controller.limit == 1


def test_the_latency_gradient_settles_near_the_engine_s_size_and_does_not_grow_unused() -> None:
    """Gradient mode: each request's latency is its time in the queue plus a service that slows with the batch."""
    places, service = 6, 0.5
    controller = LimitController(LimitSettings())
    now, seen = 0.0, []
    for _ in range(600):  # 60 s of windows of 10 samples
        now += 0.1
        limit = controller.limit
        running = min(limit, places)
        latency = service * (1 + 0.1 * (running - 1)) * math.ceil(limit / places)
        controller.observe_latency(now, latency, limit)
        seen.append(controller.limit)
    assert places <= min(seen[-100:]) and max(seen[-100:]) <= 2 * places + 2
    idle = LimitController(LimitSettings(start=4))
    for k in range(100):
        idle.observe_latency(k * 0.1, 0.5, 1)
    assert idle.limit == 4


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InputError, match="at least 1"):
        LimitSettings(maximum=0)
    with pytest.raises(InputError):
        LimitSettings(kv_threshold=0.0)
    assert LimitController(LimitSettings(start=8, maximum=3)).limit == 3


def test_a_reading_the_same_as_the_last_moves_only_the_size_window() -> None:
    read, caught_up = LimitController(LimitSettings(start=8)), LimitController(LimitSettings(start=8))
    for controller in (read, caught_up):  # one waits: the limit holds
        controller.observe_metrics(0.0, EngineSignals(0.0, 8, 1, 0.1))
        controller.observe_metrics(0.05, EngineSignals(0.05, 5, 1, 0.1))
    for k in range(2, 30):
        read.observe_metrics(k * 0.05, EngineSignals(k * 0.05, 5, 1, 0.1))
    caught_up.observe_same(29 * 0.05)
    for controller in (read, caught_up):  # a queue: the size is the most run in the last second, 5 (8 ran 1.5 s ago)
        controller.observe_metrics(1.5, EngineSignals(1.5, 4, 3, 0.1))
    assert read.limit == caught_up.limit == 6


@dataclass
class ServedEngine(Engine):
    """An engine behind an API server that holds each request ``front_s`` before the engine sees
    it, and passes none on while ``stalled`` (vLLM's API server short of CPU)."""

    front_s: float = 0.05
    front: deque[float] = field(default_factory=deque)  # when each request held in front may go on
    stalled: bool = False

    def arrive(self, now: float) -> None:
        self.front.append(now + self.front_s)

    def admit(self, now: float) -> None:
        while self.front and not self.stalled and self.front[0] <= now:
            self.front.popleft()
            self.waiting.append(0)


def test_what_the_upstream_holds_outside_its_engine_is_a_queue_too() -> None:
    controller = LimitController(LimitSettings(start=8))
    # 8 in flight, 5 running, 1 waiting: 2 held before the engine, over the queue target of 1.
    assert controller.observe_metrics(0.0, EngineSignals(0.0, 5, 1, 0.1, held=8)) == 6 and controller.reason == "queue"
    assert EngineSignals(0.0, 5, 1, 0.1, held=8).outside == 2
    assert EngineSignals(0.0, 5, 1, 0.1, held=3).outside == 0  # some ended during the read
    assert EngineSignals(0.0, None, 1, 0.1, held=8).outside == 0  # not known without running
    assert saturation(EngineSignals(0.0, 5, 1, 0.1, held=8), LimitSettings()) == 3
    uncounted = LimitController(LimitSettings(start=8))
    assert uncounted.observe_metrics(0.0, EngineSignals(0.0, 5, 1, 0.1)) == 8


def test_a_short_api_server_hold_leaves_the_limit_and_the_places_as_they_were() -> None:
    loop = Loop(ServedEngine(places=6), LimitController(LimitSettings()), demand=40, held=True)
    loop.run(10.0)
    _, final, _ = settled(loop.limits, 0.0)
    assert 7 <= final <= 8
    assert loop.engine.started * loop.engine.service_s / (6 * 10.0) > 0.85  # the places' busy share


@pytest.mark.parametrize("held", [True, False])
def test_a_stalled_api_server_gets_no_more_requests_when_what_it_holds_is_counted(held: bool) -> None:
    engine = ServedEngine(places=6)
    loop = Loop(engine, LimitController(LimitSettings()), demand=40, held=held)
    loop.run(5.0)
    assert 7 <= loop.controller.limit <= 8
    engine.stalled = True  # the engine drains; what the proxy sends waits in front of it
    loop.run(8.0)
    stalled = loop.controller.limit
    assert stalled == 1 if held else stalled >= 7  # counted: the proxy keeps the requests (SFQ's to order), not the API server
    engine.stalled = False
    loop.run(14.0)
    _, final, _ = settled(loop.limits, 8.0)
    assert 7 <= final <= 8 and p90([q for t, q in loop.queues if t > 12.0]) <= 1
