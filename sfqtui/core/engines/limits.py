"""``--slots auto`` in a replay on the engine model: one limit controller per engine
(``sfqtui.core.limits``, the code ``sfqtui proxy --slots auto`` runs), fed each engine's
running, waiting and KV use every ``SCRAPE_S`` of replay time, as the proxy reads /metrics.
The balancer's slots are the limits' sum.

Most scrapes change nothing, and are not evaluated one by one (the replay took some 60 times
the CPU of fixed slots when they were): an engine is quiet when its last reading left its
limit as it was and would at any later time while the engine is untouched (no request sent to
it, no step of it ended): its KV reserved is under the threshold (so its KV use is), at most
``queue_target`` wait (in its queue or on their way to it), and its limit cannot grow (some wait, it runs fewer than its limit, or
the limit is at its maximum). A quiet untouched engine's skipped readings would only have
moved its size's window, which its next reading catches up on. While every engine is quiet
the scrapes are parked: the next due is the first after an engine is touched in a way a
reading would see. A touched engine whose limit still holds and that runs what it ran at its
last reading reads as if untouched, and so does a reading of an engine whose limit holds,
but for the size's window.
"""

from __future__ import annotations

from math import ceil

from sfqtui.core.engines.modelled import ModelledEngine
from sfqtui.core.engines.pool import EnginePool
from sfqtui.core.limits import EngineSignals, LimitController, LimitSettings
from sfqtui.core.limits.slots import HELD_AFTER_S, SCRAPE_S

INF = float("inf")


class EngineLimits:
    """Each engine's controller, and when the next scrape is due (INF: none, while nothing is
    in flight or waiting, or while the scrapes are parked: see the module's docstring)."""

    def __init__(self, settings: LimitSettings, engines: EnginePool) -> None:
        self.settings = settings
        self.engines = engines
        self.controllers = [LimitController(settings, 0.0) for _ in engines.engines]
        self.total = sum(c.limit for c in self.controllers)
        engines.limits = [c.limit for c in self.controllers]
        self.next_t = INF
        self._k = 0  # the next scrape is at k x SCRAPE_S
        self._run = 0  # the first scrape since the scrapes last started (every one since is due, parked or not)
        self._parked = False
        self._quiet = [False for _ in engines.engines]
        self._read = [-1 for _ in engines.engines]  # the scrape that last read each engine

    def wake(self, now: float) -> None:
        """Something arrived while the scrapes were stopped: the next is the first due at or after ``now``."""
        if self._parked:
            return  # the scrapes run on: an arrival touches no engine
        self._k = self._run = _first_at(now)
        self.next_t = self._k * SCRAPE_S

    def stir(self, now: float) -> None:
        """The loop sent or finished requests at ``now`` while no scrape was due: when parked and
        an engine was touched, the next scrape is the first due at or after ``now`` not yet done."""
        if self._parked and self.engines.touched and self._stirred():
            self._parked = False
            self._k = max(self._k, _first_at(now))
            self.next_t = self._k * SCRAPE_S

    def _stirred(self) -> bool:
        """Whether an engine touched while the scrapes were parked would read differently now. One whose limit
        holds and that runs what it ran at its last reading would read the same (``observe_same``): it counts as
        untouched, and the scrapes stay parked."""
        self.engines.touched = False
        stirred = False
        for engine, controller in zip(self.engines.engines, self.controllers):
            if engine.touched:
                if engine.running == controller.last_running and self._holds(engine, controller):
                    engine.touched = False
                else:
                    stirred = True
        return stirred

    def change(self, now: float, busy: bool) -> list[tuple[int, int, str]]:
        """Read every engine at ``now`` (a due scrape) and feed its controller: (engine, new limit,
        reason) of each limit that changed, in engine order. ``busy``: requests are in flight or
        waiting, so the next scrape is due (else none until ``wake``)."""
        changed = []
        k = self._k
        skipped = k - 1 if k - 1 >= self._run else -1  # the last scrape before this one, when it was due
        quiet, read = self._quiet, self._read
        kv_threshold = self.settings.kv_threshold
        for engine, controller in zip(self.engines.engines, self.controllers):
            e = engine.index
            if quiet[e] and not engine.touched:
                if not busy:  # the scrapes stop: catch up now, as the next run's scrapes start afresh
                    controller.observe_same(now)
                    read[e] = k
                continue
            if quiet[e] and read[e] < skipped:
                controller.observe_same(skipped * SCRAPE_S)
            engine.touched = False
            read[e] = k
            if self._holds(engine, controller):
                # The reading would leave the limit as it is (as for a quiet engine): only its running counts, for the size.
                controller.observe_running(now, engine.running)
                quiet[e] = True
                continue
            before = controller.limit
            # KV in use is at most what is reserved: under the threshold, the reading could not cut for KV
            # whatever its exact use, which is then not worked out (a walk over the batch).
            reserved = engine.reserved / engine.kv_tokens
            kv = engine.kv_usage(now) if reserved > kv_threshold else reserved
            # Held, as the proxy counts it: what the engine runs and queues, and what was sent HELD_AFTER_S or more ago and
            # is still on its way (request_overhead_ms); younger ones may be on the wire still, and the proxy leaves them out.
            held = engine.running + engine.waiting + self.engines.on_the_way(engine, now - HELD_AFTER_S)
            signals = EngineSignals(now, engine.running, engine.waiting, kv, held)
            if controller.observe_metrics(now, signals) != before:
                changed.append((e, controller.limit, controller.reason))
            quiet[e] = self._holds(engine, controller)
        self.engines.touched = False
        if changed:
            self.total = sum(c.limit for c in self.controllers)
            self.engines.limits = [c.limit for c in self.controllers]
        self._k = k + 1
        self._parked = busy and all(quiet)
        self.next_t = self._k * SCRAPE_S if busy and not self._parked else INF
        return changed

    def _holds(self, engine: ModelledEngine, controller: LimitController) -> bool:
        """The limit stays as it is at every reading until the engine is touched (see the module's docstring)."""
        s = self.settings
        # Its queue, and every request on its way to it (request_overhead_ms): the most a reading can count as queue until it is
        # touched, as those on their way age into what is held.
        queued = engine.outstanding - engine.running
        if engine.reserved / engine.kv_tokens > s.kv_threshold or queued > s.queue_target:
            return False
        return engine.waiting > 0 or engine.running < controller.limit or controller.limit >= s.maximum

    def first(self) -> list[tuple[int, int, str]]:
        """Each engine's first limit and its reason (``start``)."""
        return [(e, c.limit, c.reason) for e, c in enumerate(self.controllers)]


def _first_at(now: float) -> int:
    """The first scrape due at or after ``now``."""
    k = ceil(now / SCRAPE_S)
    while k * SCRAPE_S < now:
        k += 1
    while k and (k - 1) * SCRAPE_S >= now:
        k -= 1
    return k
