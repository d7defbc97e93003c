"""``LimitController``: one upstream's concurrency limit, from its metrics, its 503s, or its latency."""

from __future__ import annotations

from collections import deque

from sfqtui.core.limits.gradient import Gradient
from sfqtui.core.limits.settings import BACKOFF, KV, LATENCY, MAXIMUM, QUEUE, ROOM, STALE, START, EngineSignals, LimitSettings


class LimitController:
    """The limit, and why it last changed (``reason``, ``changed_t``). Each ``observe_*`` and
    ``backoff`` returns the limit after it, never below 1 nor above the maximum.

    From metrics (docs/proxy.md): while the engine's queue (with what the upstream holds outside
    its engine: ``EngineSignals.outside``) holds more than ``queue_target``,
    the limit is the engine's size (the most it ran in the last ``size_s``) plus the target,
    at most halved by one reading;
    while its KV use is over ``kv_threshold``, what it runs; when every request it was given runs and none
    waits, the limit grows: doubling until the first cut (finding the engine's size quickly),
    then by one, each rise ``settle_s`` after the last change so that the metrics show it first.
    Cuts are targets, not steps: a reading asks for a limit from what the engine shows, not for
    a cut from the current limit, so readings that lag the last cut do not cut again and again. Stale or missing metrics count as saturated:
    the limit holds, and halves once they have been stale for ``stall_s`` (again every stall_s).
    """

    def __init__(self, settings: LimitSettings, now: float = 0.0) -> None:
        self.settings = settings
        self.limit = settings.first
        self.reason = START
        self.changed_t = now
        self._growing_fast = True
        self._stale_since: float | None = None
        self._gradient = Gradient(settings)
        self._ran: deque[tuple[float, int]] = deque()  # (t, running): the most of the last size_s first

    def _set(self, now: float, limit: int, reason: str) -> int:
        limit = max(1, limit)
        if limit > self.settings.maximum:
            limit, reason = self.settings.maximum, MAXIMUM
        if limit != self.limit:
            if limit < self.limit:
                self._growing_fast = False
            self.limit, self.reason, self.changed_t = limit, reason, now
        return self.limit

    def _grow(self, now: float, reason: str) -> int:
        if now - self.changed_t < self.settings.settle_s or self.limit >= self.settings.maximum:
            return self.limit
        return self._set(now, self.limit * 2 if self._growing_fast else self.limit + 1, reason)

    def observe_metrics(self, now: float, signals: EngineSignals | None) -> int:
        """The engine's metrics as last read (None: none could be read)."""
        s = self.settings
        if signals is None or signals.empty or now - signals.t > s.stale_s:
            if self._stale_since is None:
                self._stale_since = now
            if now - self._stale_since >= s.stall_s and now - self.changed_t >= s.stall_s:
                return self._set(now, self.limit // 2, STALE)
            return self.limit
        self._stale_since = None
        # What the upstream holds outside its engine waits too: in an API server's own queue (or on
        # its way through it), where the order SFQ chose is no longer SFQ's to change.
        running, waiting = signals.running, (signals.waiting or 0) + signals.outside
        size = None if running is None else self._size(signals.t, running)
        if signals.kv_usage is not None and signals.kv_usage > s.kv_threshold:
            return self._set(now, min(self.limit, self.limit - 1 if running is None else running), KV)
        if waiting > s.queue_target:
            # No more than halved by one reading: a reading taken while the batch turned over, after
            # readings were too sparse to know the engine's size, cannot cut the limit to nothing.
            wanted = self.limit - 1 if size is None else max(size + s.queue_target, self.limit // 2)
            return self._set(now, min(self.limit, wanted), QUEUE)
        if waiting == 0 and running is not None and running >= self.limit:
            return self._grow(now, ROOM)
        return self.limit

    def observe_same(self, now: float) -> None:
        """The engine's metrics read at ``now`` are those of the last reading, which left the limit as it
        was and would again at any time (``observe_metrics`` at ``now`` would only move the size's window)."""
        ran = self._ran
        ran[-1] = (now, ran[-1][1])
        while ran[0][0] < now - self.settings.size_s:
            ran.popleft()

    @property
    def last_running(self) -> int | None:
        """What the engine ran at the last reading (None: none read yet)."""
        return self._ran[-1][1] if self._ran else None

    def observe_running(self, now: float, running: int) -> None:
        """The engine's metrics read at ``now``, of which only ``running`` can matter: it queues no more than
        ``queue_target``, its KV is under the threshold, and it has no room the limit could grow into (or the
        limit is at its maximum), so ``observe_metrics`` would only take ``running`` into the size's window."""
        self._stale_since = None
        self._size(now, running)

    def _size(self, t: float, running: int) -> int:
        """The most the engine ran in the last size_s, this reading included (a monotonic deque)."""
        ran = self._ran
        while ran and ran[-1][1] <= running:
            ran.pop()
        ran.append((t, running))
        while ran[0][0] < t - self.settings.size_s:
            ran.popleft()
        return ran[0][1]

    def observe_latency(self, now: float, latency_s: float, inflight: int) -> int:
        """A request's latency, and the requests in flight to this upstream when it ended (the gradient mode)."""
        gradient = self._gradient
        gradient.add(now, latency_s, inflight)
        if not gradient.due(now):
            return self.limit
        return self._set(now, gradient.limit(now, self.limit), LATENCY)

    def backoff(self, now: float) -> int:
        """The upstream answered 503 (its queue is full): cut by ``backoff_factor``, once per ``settle_s``
        (the 503s of one burst are one signal)."""
        if self.reason == BACKOFF and now - self.changed_t < self.settings.settle_s:
            return self.limit
        return self._set(now, int(self.limit * self.settings.backoff_factor), BACKOFF)
