"""The step times that explain the requests' lives best: least squares on relative error.

A step of a batch of ``n`` takes ``(d + f × P) × (1 + b × (n − 1))`` (docs/engine.md, "The
model"). Divide a request's time running at each batch size by that size's slowdown
``1 + b × (n − 1)`` and the sum, its *unslowed* time ``T(b)``, is what its steps would have
taken alone: ``d × output tokens + f × P``, where ``P`` counts the prompts prefilled in its
steps (its own and those of requests that started while it ran). So for one ``b``, ``d``
and ``f`` are a linear least-squares problem (two normal equations), and ``b`` is found
by a search over one number. Each request is predicted to take its queueing time plus
``(d × m + f × P) × run / T(b)``: its run at the batch sizes it met, at the fitted speed.

The residuals are relative (error over the measured time), the figure the held-out error
reports, so long and short requests count alike. A measured time to first token adds a
row of its own, ``d + f × (prompts starting with it)`` slowed by the batch it started in,
which pins ``f`` where prompts alone would leave it loose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sfqtui.core.analysis.engine_fit.lived import Lived, Served

# The slowdowns tried before narrowing down: 0, then from 0.001 doubling up to about 8.
SLOWDOWN_GRID = (0.0, *(0.001 * 2.0**k for k in range(14)))
NARROWING_STEPS = 30  # golden-section steps between the best grid point's neighbours: to a millionth of that span
_GOLDEN = (math.sqrt(5) - 1) / 2
STEP_UNDER_WAY = 0.5  # of a step: how long on average a request waits for the step running when it came
Found = TypeVar("Found")


@dataclass(frozen=True)
class StepTimes:
    """The fitted parameters of a step: seconds per decoded token, seconds per prefilled prompt token, slowdown per extra request."""

    decode_s: float
    prefill_s: float
    batch_slowdown: float
    context_s: float = 0.0  # seconds per token of context held (shaped.py fits it)
    slowed_prefill: bool = True

    @property
    def shaped(self) -> bool:
        """Beyond this module's shape: a context term, or the prefill outside the slowdown (shaped.py)."""
        return bool(self.context_s) or not self.slowed_prefill


@dataclass(frozen=True)
class Solution:
    times: StepTimes
    loss: float  # mean squared relative error over the rows fitted


def steps(served: Served, lived: Lived) -> float:
    """The steps a request spends in the batch: one per output token, and half the step under way
    when it came (the batch admits only between steps), when the batch was running."""
    return served.output_tokens + _under_way(lived)


def unslowed(lived: Lived, slowdown: float) -> float:
    """How long the request's run would have taken alone in the batch."""
    return sum(s / (1 + slowdown * (n - 1)) for n, s in lived.running)


def predicted_service(served: Served, lived: Lived, times: StepTimes) -> float:
    """The service time ``times`` give the request, at the batch sizes it met."""
    alone = times.decode_s * steps(served, lived) + times.prefill_s * lived.prefill_tokens
    base = unslowed(lived, times.batch_slowdown)
    if base <= 0:  # no run to scale: the steps' time at the size it started in
        return lived.queued_s + alone * (1 + times.batch_slowdown * (lived.first_batch - 1))
    return lived.queued_s + alone * lived.run_s / base


def predicted_ttft(lived: Lived, times: StepTimes) -> float:
    """The time to first token ``times`` give the request: its queueing and its first step."""
    first = (times.decode_s + times.prefill_s * lived.first_prefill) * (1 + times.batch_slowdown * (lived.first_batch - 1))
    return lived.queued_s + first + _under_way(lived) * times.decode_s * (1 + times.batch_slowdown * (lived.joined - 1))


def _under_way(lived: Lived) -> float:
    return STEP_UNDER_WAY if lived.mid_step else 0.0


class _Normal:
    """Σ x xᵀ, Σ x y and Σ y² of rows ``x · (d, f) ≈ y``."""

    def __init__(self) -> None:
        self.aa = self.ab = self.bb = self.ay = self.by = self.yy = 0.0
        self.rows = 0

    def add(self, a: float, b: float, y: float) -> None:
        self.aa += a * a
        self.ab += a * b
        self.bb += b * b
        self.ay += a * y
        self.by += b * y
        self.yy += y * y
        self.rows += 1

    def loss(self, d: float, f: float) -> float:
        return self.aa * d * d + 2 * self.ab * d * f + self.bb * f * f - 2 * (self.ay * d + self.by * f) + self.yy

    def best(self) -> tuple[float, float, float]:
        """The (d, f) >= 0 of least squared error, and that error."""
        candidates = [(max(0.0, self.ay / self.aa) if self.aa > 0 else 0.0, 0.0),
                      (0.0, max(0.0, self.by / self.bb) if self.bb > 0 else 0.0)]
        det = self.aa * self.bb - self.ab * self.ab
        if det > 1e-12 * self.aa * self.bb:
            d, f = (self.ay * self.bb - self.by * self.ab) / det, (self.by * self.aa - self.ay * self.ab) / det
            if d >= 0 and f >= 0:
                candidates.append((d, f))
        d, f = min(candidates, key=lambda df: self.loss(*df))
        return d, f, max(0.0, self.loss(d, f))


class Rows:
    """The requests to fit, their lives flattened for the many slowdowns tried."""

    def __init__(self, served: Sequence[Served], lived: Sequence[Lived]) -> None:
        self.service = [(tuple(n - 1 for n, _ in life.running), tuple(s for _, s in life.running), life.run_s / r.service_s,
                         steps(r, life), life.prefill_tokens) for r, life in zip(served, lived) if life.running]
        self.ttft = [(life.first_batch - 1, life.joined - 1, _under_way(life), 1 / r.ttft_s, life.first_prefill,
                      (r.ttft_s - life.queued_s) / r.ttft_s)
                     for r, life in zip(served, lived) if r.ttft_s is not None and r.ttft_s > life.queued_s]

    def at(self, slowdown: float) -> Solution:
        """The best (d, f) for this slowdown, and its mean squared relative error."""
        rows = _Normal()
        for extras, secs, share, output, prefill in self.service:
            base = sum([s / (1 + slowdown * k) for k, s in zip(extras, secs)])
            g = share / base  # run / (T × service)
            rows.add(output * g, prefill * g, share)
        for extra, before, waited, inverse, first, y in self.ttft:
            c = (1 + slowdown * extra) * inverse
            rows.add(c + waited * (1 + slowdown * before) * inverse, first * c, y)
        d, f, loss = rows.best()
        return Solution(StepTimes(d, f, slowdown), loss / max(1, rows.rows))

    def rough(self) -> Solution:
        """The best of the grid's slowdowns."""
        return min((self.at(b) for b in SLOWDOWN_GRID), key=lambda s: s.loss)

    def solve(self) -> Solution:
        """The step times of least mean squared relative error: the grid, then a golden-section search around its best."""
        return searched(self.at, NARROWING_STEPS)


def searched(at: Callable[[float], Solution], steps: int) -> Solution:
    """The least loss of ``at`` over the slowdowns: the grid, then ``steps`` of a golden-section search between the
    best grid point's neighbours."""
    tried = [at(b) for b in SLOWDOWN_GRID]
    k = min(range(len(tried)), key=lambda j: tried[j].loss)
    low = SLOWDOWN_GRID[max(0, k - 1)]
    high = SLOWDOWN_GRID[min(len(SLOWDOWN_GRID) - 1, k + 1)]
    return min((tried[k], narrowed(at, lambda s: s.loss, low, high, steps)), key=lambda s: s.loss)


def narrowed(at: Callable[[float], Found], loss: Callable[[Found], float], low: float, high: float, steps: int) -> Found:
    """A golden-section search of ``steps`` for the least ``loss(at(x))`` between ``low`` and ``high``: what ``at`` gave there."""
    x1, x2 = high - _GOLDEN * (high - low), low + _GOLDEN * (high - low)
    f1, f2 = at(x1), at(x2)
    for _ in range(steps):
        if loss(f1) <= loss(f2):
            high, x2, f2 = x2, x1, f1
            x1 = high - _GOLDEN * (high - low)
            f1 = at(x1)
        else:
            low, x1, f1 = x1, x2, f2
            x2 = low + _GOLDEN * (high - low)
            f2 = at(x2)
    return min((f1, f2), key=loss)
