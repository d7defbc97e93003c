"""What a limit controller is given: its settings, and an engine's signals as read at a time."""

from __future__ import annotations

from dataclasses import dataclass

from sfqtui.errors import InputError

# Why a limit changed (the ``limit`` event's ``reason``): its first value; the engine's queue
# or KV over its threshold; metrics stale for ``stall_s``; room to grow (the engine's metrics
# show every request running and none waiting); the latency gradient; a 503 (queue full); the
# operator's maximum reached.
START, QUEUE, KV, STALE, ROOM, LATENCY, BACKOFF, MAXIMUM = "start", "queue", "kv", "stale", "room", "latency", "backoff", "maximum"
REASONS = (START, QUEUE, KV, STALE, ROOM, LATENCY, BACKOFF, MAXIMUM)


@dataclass(frozen=True)
class LimitSettings:
    """One upstream's controller: where it starts, its bounds, and when it moves (docs/proxy.md, "Slots that follow the engine")."""

    start: int = 2  # low: the controller grows it once the engine shows room
    maximum: int = 256  # the operator's auto:MAX; vLLM's default max_num_seqs
    # Metrics: llm-d's saturation, max(waiting / queue_target, kv / kv_threshold), with our
    # queue target at one request (llm-d routes around a queue of 5; we size the queue itself).
    queue_target: int = 1
    kv_threshold: float = 0.8
    stale_s: float = 0.2  # metrics older than this count as saturated: the limit holds
    # Stale this long: the limit halves, and again every stall_s. A stalled engine ends no
    # request, so the limit already sends it no more; the cut is for when it comes back.
    stall_s: float = 3.0
    settle_s: float = 0.1  # a rise waits this long after the last change, for the metrics to show it
    # The engine's size is the most it ran in the last size_s: a moment when its batch turned
    # over (some ended, the next not yet admitted) does not look like an engine that shrank.
    size_s: float = 1.0
    backoff_factor: float = 0.5  # a 503 (the engine's queue full) multiplies the limit by this
    # Latency (Envoy's adaptive concurrency, Netflix's Gradient2): every window_s (with at least
    # min_samples), limit * (baseline * (1 + buffer)) / sample + sqrt(limit), where sample is the
    # window's median and baseline the lowest window median of the last baseline_s.
    window_s: float = 0.5
    min_samples: int = 5
    buffer: float = 0.25
    baseline_s: float = 60.0
    min_gradient: float = 0.5
    max_gradient: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.maximum, bool) or not isinstance(self.maximum, int) or self.maximum < 1:
            raise InputError(f"the most slots an upstream may get must be a whole number of at least 1, not {self.maximum!r}")
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start < 1:
            raise InputError(f"the first limit must be a whole number of at least 1, not {self.start!r}")
        if self.queue_target < 0 or not 0 < self.kv_threshold <= 1:
            raise InputError("the queue target must be >= 0 and the KV threshold in (0, 1]")
        if not (self.stale_s > 0 and self.stall_s > 0 and self.settle_s >= 0 and self.size_s > 0 and self.window_s > 0 and self.baseline_s > 0):
            raise InputError("the controller's times must be > 0")
        if not 0 < self.backoff_factor < 1 or not 0 < self.min_gradient <= 1 <= self.max_gradient or self.buffer < 0:
            raise InputError("the backoff factor must be in (0, 1), the gradient's bounds around 1 and the buffer >= 0")

    @property
    def first(self) -> int:
        return min(self.start, self.maximum)


@dataclass(frozen=True)
class EngineSignals:
    """An engine's state as its metrics said at time ``t`` (None: not exported): requests
    running, waiting in its own queue, and its KV cache use (0 to 1); and ``held``, the requests
    its caller had in flight there throughout the reading (None: not counted)."""

    t: float
    running: int | None
    waiting: int | None
    kv_usage: float | None
    held: int | None = None

    @property
    def empty(self) -> bool:
        return self.running is None and self.waiting is None and self.kv_usage is None

    @property
    def outside(self) -> int:
        """Requests the upstream holds that its engine neither runs nor queues: in flight, less
        running, less waiting (vLLM's API server tokenizing them, or queueing them for its engine
        core); 0 when either count is unknown."""
        if self.held is None or self.running is None:
            return 0
        return max(0, self.held - self.running - (self.waiting or 0))


def saturation(signals: EngineSignals, settings: LimitSettings) -> float:
    """llm-d's saturation score, ``max(waiting / queue target, kv / kv threshold)``, the requests held outside
    the engine counted as waiting: over 1, the engine holds more than it should."""
    waiting = (signals.waiting or 0) + signals.outside
    queue = waiting / settings.queue_target if settings.queue_target else float("inf") if waiting else 0.0
    return max(queue, (signals.kv_usage or 0.0) / settings.kv_threshold)
