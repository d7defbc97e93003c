"""An engine model fitted to a recording, and its error on requests the fit never saw.

The split is by time: the requests are taken in arrival order, the first ones fitted and
the last ``held_out_share`` held out. Held-out requests come after every fitted one, as
tomorrow's traffic comes after the recording a model is fitted to; a split that takes every
fifth request would let the fit see the minutes it is judged on. The engine's timeline is
rebuilt from every request (a held-out request took places in the batch while fitted ones
ran); only the fitted requests' times enter the least squares.

The engine's places (max_num_seqs) are given, or found: every count from 1 to the most
requests in flight at once is fitted, and the one of least error kept (a count below the
truth invents queueing the recording does not show; above the most in flight, every count
explains it alike, so the most in flight is the least the engine had).

The API server's time (request_overhead_ms) is given, or found: a request reaches the
engine's queue that long after it was sent, the same for every request, so it is what no
step time explains. Overheads from 0 up to the shortest service time are tried (the grid,
then a golden-section search) with the best place counts at 0, by the same least squares;
the places are then searched again at the overhead found.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from sfqtui.core.analysis.engine_fit.errors import Errors
from sfqtui.core.analysis.engine_fit.lived import Lived, Served, lived_through, most_in_flight
from sfqtui.core.analysis.engine_fit.shaped import ShapedRows, predicted
from sfqtui.core.analysis.engine_fit.solve import Rows, Solution, narrowed
from sfqtui.core.analysis.engine_fit.waits import ReplayedErrors
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.numbers import amount, count, counted, percent, seconds
from sfqtui.errors import InputError

HELD_OUT_SHARE = 0.2
MIN_FITTED = 8  # requests: two parameters and a slowdown from fewer would fit noise
MIN_HELD_OUT = 2
NARROWED = 3  # place counts whose slowdown is searched finely: the best on the rough grid
OVERHEAD_GRID = 8  # overheads tried first: 0, and the shortest service time halved 8 times down to none
OVERHEAD_STEPS = 12  # golden-section steps between the best grid overhead's neighbours
INF = float("inf")
# A fit is poor when its held-out service times are off by more than this at the median, or
# at the 90th percentile (docs/engine.md): a recording of the emulator, even on a machine
# loaded many times over, comes under 10% and 30%; times that follow no engine come over both.
POOR_MEDIAN = 0.20
POOR_P90 = 0.50
# The place counts tried at an overhead: (rough loss, the rows fitted, every request's life) by count.
Tried = dict[int, tuple[float, Rows, list[Lived]]]


@dataclass(frozen=True)
class EngineFit:
    model: EngineModel
    places_given: bool  # max_num_seqs was given, not found
    overhead_given: bool  # request_overhead_ms was given, not found
    most_in_flight: int
    fitted: int  # requests whose times were fitted
    held_out: int
    held_out_from_s: float  # the arrival of the first held-out request
    service_fitted: Errors
    service_held_out: Errors
    ttft_held_out: Errors | None  # None: no held-out request has a time to first token
    loss: float = field(repr=False)
    order: tuple[int, ...] = field(repr=False, compare=False)  # the requests in arrival order, as positions in what was fitted
    lived: tuple[Lived, ...] = field(repr=False, compare=False)  # in that order, with the fitted places

    @property
    def poor(self) -> str | None:
        """Why the model predicts the held-out requests poorly, in words (None: it does not)."""
        errors, said = self.service_held_out, []
        if errors.median is not None and errors.median > POOR_MEDIAN:
            said.append(f"{percent(errors.median)} at the median (over {percent(POOR_MEDIAN)})")
        if errors.p90 is not None and errors.p90 > POOR_P90:
            said.append(f"{percent(errors.p90)} at the 90th percentile (over {percent(POOR_P90)})")
        return f"its held-out service times are off by {' and '.join(said)}" if said else None

    def held_out_said(self, replayed: ReplayedErrors | None = None) -> str:
        """The held-out errors in words, short: what a replay that runs the model names it by."""
        errors = self.service_held_out
        said = [f"service time {percent(errors.median)}/{percent(errors.p90)}"] + ([] if replayed is None else replayed.said())
        return f"off by (median/p90) {', '.join(said)} on {counted(self.held_out, 'held-out request')}"

    def as_dict(self, replayed: ReplayedErrors | None = None) -> dict[str, object]:
        """What the model's JSON says of its fit (the ``fit`` key; the caller adds its source first):
        the figures in words first, then in numbers; ``replayed``: the errors of a replay on the model."""
        return {
            "held_out": self.held_out_said(replayed),
            **({"poor": f"a poor fit: {self.poor}"} if self.poor else {}),
            "split": f"by arrival: the first {count(self.fitted)} requests fitted, the last {count(self.held_out)} "
                     f"(from {seconds(self.held_out_from_s)} s) held out",
            "max_num_seqs": "given" if self.places_given else f"best fit of 1..{self.most_in_flight} (the most in flight at once)",
            "request_overhead_ms": "given" if self.overhead_given else "best fit of 0 up to the shortest service time",
            "fitted_requests": self.fitted,
            "held_out_requests": self.held_out,
            "held_out_error": {"service_s": self.service_held_out.as_dict(),
                               **({"ttft_s": self.ttft_held_out.as_dict()} if self.ttft_held_out else {}),
                               **(replayed.as_dict() if replayed else {})},
            "fitted_error": {"service_s": self.service_fitted.as_dict()},
        }


def split(served: Sequence[Served], share: float = HELD_OUT_SHARE) -> int:
    """How many requests, in arrival order, are fitted; the rest are held out."""
    held = max(MIN_HELD_OUT, round(len(served) * share))
    if len(served) - held < MIN_FITTED:
        raise InputError(f"too few requests to fit: {counted(len(served), 'request')} with measured times "
                         f"(the fit needs {count(MIN_FITTED)} and holds out {count(MIN_HELD_OUT)} or {HELD_OUT_SHARE:.0%})")
    return len(served) - held


def _rough_places(most: int) -> list[int]:
    """Place counts tried first: every one up to 8, then about a quarter apart, and the most in flight."""
    tried = list(range(1, min(8, most) + 1))
    while tried[-1] < most:
        tried.append(min(most, math.ceil(tried[-1] * 1.25)))
    return tried


def _places(served: Sequence[Served], fitted: int, most: int, places: int | None, overhead_s: float) -> Tried:
    """The place counts tried at ``overhead_s`` (``places`` alone when given), each with its rough loss."""
    tried: Tried = {}

    def rough(k: int) -> None:
        lived = lived_through(served, k, overhead_s)
        if lived is None:
            if places is not None and overhead_s == 0:
                raise InputError(f"--max-num-seqs {places}: too few places for this recording (an answer ended before a place "
                                 f"was free for it; it had up to {counted(most, 'request')} in flight)")
            return
        rows = Rows(served[:fitted], lived[:fitted])
        tried[k] = rows.rough().loss, rows, lived

    first = [places] if places is not None else _rough_places(most)
    for k in first:
        rough(k)
    if places is None and tried:  # every count between the best rough one's neighbours
        best = min(tried, key=lambda k: (tried[k][0], -k))
        at = first.index(best)
        for k in range(first[max(0, at - 1)] + 1, first[min(len(first) - 1, at + 1)]):
            if k not in tried:
                rough(k)
    return tried


def _closest(tried: Tried) -> list[int]:
    """The best few place counts; equal errors: the more places, the less queueing assumed."""
    return sorted(tried, key=lambda k: (tried[k][0], -k))[:NARROWED]


def _overhead(served: Sequence[Served], fitted: int, near: list[int]) -> float:
    """The overhead (seconds) of least rough loss with the place counts ``near``: 0 and the shortest
    service time halved OVERHEAD_GRID times to once, then a golden-section search between the best one's neighbours."""

    def at(overhead_s: float) -> tuple[float, float]:
        losses = [Rows(served[:fitted], lived[:fitted]).rough().loss
                  for lived in (lived_through(served, k, overhead_s) for k in near) if lived is not None]
        return min(losses, default=INF), overhead_s

    shortest = min(r.service_s for r in served)
    grid = [0.0, *(shortest / 2**j for j in range(OVERHEAD_GRID, -1, -1))]  # the shortest itself explains nothing: a bound
    tried = [at(o) for o in grid]
    j = min(range(len(grid)), key=lambda k: tried[k][0])
    low, high = grid[max(0, j - 1)], grid[min(len(grid) - 1, j + 1)]
    return min((tried[j], narrowed(at, lambda found: found[0], low, high, OVERHEAD_STEPS)))[1]


def _shaped(served: Sequence[Served], lived: Sequence[Lived], plain: Solution) -> Solution:
    """The whole shape's best fit (shaped.py: a context term, the prefill in the slowdown or outside it) where it
    explains the requests better than ``plain``, the fit without it; else ``plain``. A shape whose decode comes out 0 is
    left: its steps could take no time, and a replay refuses it."""
    shaped = [found for found in (ShapedRows(served, lived, slowed).solve() for slowed in (True, False)) if found.times.decode_s > 0]
    return min((plain, *shaped), key=lambda s: s.loss)


def fit_engine(served: Sequence[Served], places: int | None = None, share: float = HELD_OUT_SHARE,
               overhead_ms: float | None = None, shape: bool = True) -> EngineFit:
    """The engine model of least relative error on the first requests of ``served`` (arrival order),
    judged on the rest; ``places``: the engine's max_num_seqs, ``overhead_ms``: its request_overhead_ms, when known;
    ``shape``: also fit the whole shape (a context term, the prefill outside the slowdown), kept where it fits better."""
    order = sorted(range(len(served)), key=lambda i: served[i].arrival_s)
    served = [served[i] for i in order]
    fitted = split(served, share)
    most = most_in_flight(served)
    overhead_s = 0.0 if overhead_ms is None else overhead_ms / 1e3
    tried = _places(served, fitted, most, places, overhead_s)
    if not tried:
        raise InputError(f"--request-overhead-ms {amount(overhead_ms)}: longer than this recording's shortest answer")
    if overhead_ms is None:
        overhead_s = _overhead(served, fitted, _closest(tried))
        if overhead_s > 0:
            tried = _places(served, fitted, most, places, overhead_s)
    # The best few on the rough grid of slowdowns, searched finely.
    solution, k = min(((tried[k][1].solve(), k) for k in _closest(tried)), key=lambda found: (found[0].loss, -found[1]))
    lived = tried[k][2]
    if shape:
        solution = _shaped(served[:fitted], lived[:fitted], solution)
    times = solution.times
    kv = max(EngineModel.kv_tokens, *(r.input_tokens + r.output_tokens for r in served))
    model = EngineModel(max_num_seqs=k, kv_tokens=kv, decode_ms_per_token=times.decode_s * 1e3,
                        prefill_us_per_token=times.prefill_s * 1e6, batch_slowdown=times.batch_slowdown,
                        request_overhead_ms=overhead_s * 1e3, context_us_per_token=times.context_s * 1e6,
                        slowed_prefill=times.slowed_prefill)
    predictions = [predicted(r, life, times) for r, life in zip(served, lived)]
    service = [abs(p[0] - r.service_s) / r.service_s for r, p in zip(served, predictions)]
    ttft = [abs(p[1] - r.ttft_s) / r.ttft_s for r, p in zip(served[fitted:], predictions[fitted:]) if r.ttft_s is not None and r.ttft_s > 0]
    return EngineFit(model, places is not None, overhead_ms is not None, most, fitted, len(served) - fitted, served[fitted].arrival_s,
                     Errors.of(service[:fitted]), Errors.of(service[fitted:]), Errors.of(ttft) if ttft else None, solution.loss,
                     tuple(order), tuple(lived))
