"""The latency gradient (Envoy's adaptive concurrency, Netflix's Gradient2): the limit a window of latencies asks for."""

from __future__ import annotations

import math
import statistics
from collections import deque

from sfqtui.core.limits.settings import LimitSettings


class Gradient:
    """Collects latency samples; every window, the limit ``(baseline * (1 + buffer)) / sample``
    times the current one, plus its square root as headroom for a queue (Envoy's default).

    The baseline is the lowest window median of the last ``baseline_s`` (Envoy measures a
    minimum RTT; Gradient2 a long average): when load stays high for longer than that, the
    baseline rises with it, so the limit may drift up until a quieter window brings it back.
    """

    def __init__(self, settings: LimitSettings) -> None:
        self.settings = settings
        self._samples: list[float] = []
        self._most_inflight = 0
        self._window_start: float | None = None
        self._medians: deque[tuple[float, float]] = deque()  # (t, window median), the lowest kept first

    def add(self, now: float, latency_s: float, inflight: int) -> None:
        if self._window_start is None:
            self._window_start = now
        self._samples.append(latency_s)
        self._most_inflight = max(self._most_inflight, inflight)

    def due(self, now: float) -> bool:
        return (self._window_start is not None and now - self._window_start >= self.settings.window_s
                and len(self._samples) >= self.settings.min_samples)

    def _baseline(self, now: float, median: float) -> float:
        """The lowest median of the last baseline_s, this one included (a monotonic deque)."""
        medians = self._medians
        while medians and medians[-1][1] >= median:
            medians.pop()
        medians.append((now, median))
        while medians[0][0] < now - self.settings.baseline_s:
            medians.popleft()
        return medians[0][1]

    def limit(self, now: float, limit: int) -> int:
        """The window's verdict (call when ``due``): the new limit, unbounded above; the window starts again."""
        s = self.settings
        sample = statistics.median(self._samples)
        baseline = self._baseline(now, sample)
        used = self._most_inflight
        self._samples, self._most_inflight, self._window_start = [], 0, None
        if sample <= 0:
            return limit
        gradient = min(s.max_gradient, max(s.min_gradient, baseline * (1 + s.buffer) / sample))
        wanted = math.ceil(limit * gradient + math.sqrt(limit))
        if used < limit / 2:
            return min(wanted, limit)  # the limit was not what held requests back: no reason to grow it
        return wanted
