"""The step times of the engine model's whole shape that explain the requests' lives best:
a context term, and a prefill in the batch slowdown or outside it (docs/engine.md, "Fitting
the model").

A step of a batch of ``n`` holding ``C`` tokens of context takes ``d × σ + f × P × (σ or 1) + c × C``,
``σ = 1 + b × (n − 1)``. A request's run is the sum of its steps, ``d × Σσ + f × ΣP(σ) + c × ΣC``:
linear in ``(d, f, c)`` for one ``b``, once it is known how many of its steps fell in each span
of its life (a stretch of one batch, ``Lived.spans``). The prompts prefilled are known (they
join as a span begins); the steps are not, since a span of slow steps holds fewer of them. So
the counts come from the step times themselves, by a fixed point: first in proportion to each
span's time, then to its time less the prefill that began it, over its step time by the last
solution; each request's counts scaled to its output tokens. Nonnegative least squares on the
relative error of the service time, as solve.py's, with a measured time to first token a row of
its own (the first step, and the step under way). ``b`` is searched as there.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from sfqtui.core.analysis.engine_fit.lived import Lived, Served
from sfqtui.core.analysis.engine_fit.solve import STEP_UNDER_WAY, Solution, StepTimes, predicted_service, predicted_ttft, searched

ROUNDS = 3  # fixed-point rounds: step counts from the span times, then twice from the last solution
NARROWING_STEPS = 24


@dataclass(frozen=True)
class Coefficients:
    """What multiplies (d, f, c) in a request's run and in its first step."""

    run: tuple[float, float, float]
    first: tuple[float, float, float]


def coefficients(served: Served, lived: Lived, times: StepTimes | None, slowdown: float, slowed_prefill: bool) -> Coefficients:
    """The request's run and first step as sums over its steps, its steps counted by ``times`` (None: by the spans' times)."""
    under_way = STEP_UNDER_WAY if lived.mid_step else 0.0
    weights = []
    prefill = 0.0
    for n, secs, joined, before, after in lived.spans:
        sigma = 1 + slowdown * (n - 1)
        stall = joined * (sigma if slowed_prefill else 1.0)  # prompt tokens prefilled, times the slowdown they take
        prefill += stall
        step = 0.0 if times is None else times.decode_s * sigma + times.context_s * (before + after) / 2
        weights.append(max(0.0, secs - times.prefill_s * stall) / step if times is not None and step > 0 else secs)
    total = sum(weights)
    if total <= 0:  # no time to count steps by: evenly
        weights, total = [1.0] * len(weights), float(len(weights))
    steps = served.output_tokens + under_way
    decode = context = 0.0
    for (n, _, _, before, after), w in zip(lived.spans, weights):
        share = steps * w / total
        decode += share * (1 + slowdown * (n - 1))
        context += share * (before + after) / 2
    at_start = lived.spans[0][3] if lived.spans else 0.0
    sigma, sigma_before = 1 + slowdown * (lived.first_batch - 1), 1 + slowdown * (lived.joined - 1)
    first = (sigma + under_way * sigma_before, lived.first_prefill * (sigma if slowed_prefill else 1.0), at_start)
    return Coefficients((decode, prefill, context), first)


class ShapedRows:
    """The requests to fit under the whole shape, one prefill placement (slowed or not)."""

    def __init__(self, served: Sequence[Served], lived: Sequence[Lived], slowed_prefill: bool) -> None:
        self.slowed_prefill = slowed_prefill
        self.rows = [(r, life) for r, life in zip(served, lived) if life.spans]

    def at(self, slowdown: float) -> Solution:
        """The best (d, f, c) for this slowdown, the step counts at their fixed point."""
        times: StepTimes | None = None
        solution = Solution(StepTimes(0.0, 0.0, slowdown), float("inf"))
        for _ in range(ROUNDS):
            normal = _Normal3()
            for r, life in self.rows:
                found = coefficients(r, life, times, slowdown, self.slowed_prefill)
                normal.add(tuple(x / r.service_s for x in found.run), life.run_s / r.service_s)
                if r.ttft_s is not None and r.ttft_s > life.queued_s:
                    normal.add(tuple(x / r.ttft_s for x in found.first), (r.ttft_s - life.queued_s) / r.ttft_s)
            (d, f, c), loss = normal.best()
            times = StepTimes(d, f, slowdown, c, self.slowed_prefill)
            solution = Solution(times, loss / max(1, normal.rows))
        return solution

    def solve(self) -> Solution:
        """The grid of slowdowns, then a golden-section search around its best."""
        return searched(self.at, NARROWING_STEPS)


def predicted(served: Served, lived: Lived, times: StepTimes) -> tuple[float, float]:
    """The service time and the time to first token ``times`` give the request (under the whole shape: its steps counted by them)."""
    if not times.shaped:
        return predicted_service(served, lived, times), predicted_ttft(lived, times)
    found = coefficients(served, lived, times, times.batch_slowdown, times.slowed_prefill)
    x = (times.decode_s, times.prefill_s, times.context_s)
    return (lived.queued_s + sum(a * b for a, b in zip(found.run, x)), lived.queued_s + sum(a * b for a, b in zip(found.first, x)))


class _Normal3:
    """Σ x xᵀ, Σ x y and Σ y² of rows ``x · (d, f, c) ≈ y``; the best nonnegative (d, f, c)."""

    def __init__(self) -> None:
        self.xx = [[0.0] * 3 for _ in range(3)]
        self.xy = [0.0] * 3
        self.yy = 0.0
        self.rows = 0

    def add(self, x: tuple[float, ...], y: float) -> None:
        for i in range(3):
            self.xy[i] += x[i] * y
            for j in range(3):
                self.xx[i][j] += x[i] * x[j]
        self.yy += y * y
        self.rows += 1

    def loss(self, p: Sequence[float]) -> float:
        quad = sum(p[i] * self.xx[i][j] * p[j] for i in range(3) for j in range(3))
        return quad - 2 * sum(p[i] * self.xy[i] for i in range(3)) + self.yy

    def best(self) -> tuple[tuple[float, float, float], float]:
        """Each set of free parameters (the others 0) solved exactly; the nonnegative one of least loss, among those
        with a decode time where there are any (a replay needs one: with none, a step could take no time)."""
        found: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
        for size in (1, 2, 3):
            for free in itertools.combinations(range(3), size):
                values = _solve([[self.xx[i][j] for j in free] for i in free], [self.xy[i] for i in free])
                if values is not None and all(v >= 0 for v in values):
                    p = [0.0, 0.0, 0.0]
                    for i, v in zip(free, values):
                        p[i] = v
                    found.append((p[0], p[1], p[2]))
        best = min([p for p in found if p[0] > 0] or found, key=self.loss)
        return best, max(0.0, self.loss(best))


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """``a x = b`` by Gaussian elimination with partial pivoting; None when ``a`` is (nearly) singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    scale = max((abs(v) for row in a for v in row), default=0.0)
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) <= 1e-12 * scale:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                factor = m[r][col] / m[col][col]
                for k in range(col, n + 1):
                    m[r][k] -= factor * m[col][k]
    return [m[i][n] / m[i][i] for i in range(n)]
