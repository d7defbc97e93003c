"""``--slots auto`` in a replay on the engine model: one limit controller per engine
(``sfqtui.core.limits``, the code ``sfqtui proxy --slots auto`` runs), fed each engine's
running, waiting and KV use every ``SCRAPE_S`` of replay time, as the proxy reads /metrics.
The balancer's slots are the limits' sum.
"""

from __future__ import annotations

from math import ceil

from sfqtui.core.engines.pool import EnginePool
from sfqtui.core.limits import EngineSignals, LimitController, LimitSettings
from sfqtui.core.limits.slots import SCRAPE_S

INF = float("inf")


class EngineLimits:
    """Each engine's controller, and when the next scrape is due (INF: none, while nothing is
    in flight or waiting: an idle engine's metrics move no limit, and are not read)."""

    def __init__(self, settings: LimitSettings, engines: EnginePool) -> None:
        self.engines = engines
        self.controllers = [LimitController(settings, 0.0) for _ in engines.engines]
        self.total = sum(c.limit for c in self.controllers)
        engines.limits = [c.limit for c in self.controllers]
        self.next_t = INF
        self._k = 0  # the next scrape is at k x SCRAPE_S

    def wake(self, now: float) -> None:
        """Something arrived while the scrapes were stopped: the next is the first due at or after ``now``."""
        k = ceil(now / SCRAPE_S)
        while k * SCRAPE_S < now:
            k += 1
        while k and (k - 1) * SCRAPE_S >= now:
            k -= 1
        self._k = k
        self.next_t = k * SCRAPE_S

    def change(self, now: float, busy: bool) -> list[tuple[int, int, str]]:
        """Read every engine at ``now`` (a due scrape) and feed its controller: (engine, new limit,
        reason) of each limit that changed, in engine order. ``busy``: requests are in flight or
        waiting, so the next scrape is due (else none until ``wake``)."""
        changed = []
        for engine, controller in zip(self.engines.engines, self.controllers):
            before = controller.limit
            signals = EngineSignals(now, engine.running, engine.waiting, engine.kv_usage(now))
            if controller.observe_metrics(now, signals) != before:
                changed.append((engine.index, controller.limit, controller.reason))
        self.total = sum(c.limit for c in self.controllers)
        self.engines.limits = [c.limit for c in self.controllers]
        self._k += 1
        self.next_t = self._k * SCRAPE_S if busy else INF
        return changed

    def first(self) -> list[tuple[int, int, str]]:
        """Each engine's first limit and its reason (``start``)."""
        return [(e, c.limit, c.reason) for e, c in enumerate(self.controllers)]
