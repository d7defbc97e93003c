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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from sfqtui.core.analysis.engine_fit.errors import Errors
from sfqtui.core.analysis.engine_fit.lived import Lived, Served, lived_through, most_in_flight
from sfqtui.core.analysis.engine_fit.solve import Rows, predicted_service, predicted_ttft
from sfqtui.core.analysis.engine_fit.waits import ReplayedErrors
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.numbers import count, counted, percent, seconds
from sfqtui.errors import InputError

HELD_OUT_SHARE = 0.2
MIN_FITTED = 8  # requests: two parameters and a slowdown from fewer would fit noise
MIN_HELD_OUT = 2
NARROWED = 3  # place counts whose slowdown is searched finely: the best on the rough grid


@dataclass(frozen=True)
class EngineFit:
    model: EngineModel
    places_given: bool  # max_num_seqs was given, not found
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
            "split": f"by arrival: the first {count(self.fitted)} requests fitted, the last {count(self.held_out)} "
                     f"(from {seconds(self.held_out_from_s)} s) held out",
            "max_num_seqs": "given" if self.places_given else f"best fit of 1..{self.most_in_flight} (the most in flight at once)",
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


def fit_engine(served: Sequence[Served], places: int | None = None, share: float = HELD_OUT_SHARE) -> EngineFit:
    """The engine model of least relative error on the first requests of ``served`` (arrival order),
    judged on the rest; ``places``: the engine's max_num_seqs, when known."""
    order = sorted(range(len(served)), key=lambda i: served[i].arrival_s)
    served = [served[i] for i in order]
    fitted = split(served, share)
    most = most_in_flight(served)
    tried: dict[int, tuple[float, Rows, list[Lived]]] = {}

    def rough(k: int) -> None:
        lived = lived_through(served, k)
        if lived is None:
            if places is not None:
                raise InputError(f"--max-num-seqs {places}: too few places for this recording (an answer ended before a place "
                                 f"was free for it; it had up to {counted(most, 'request')} in flight)")
            return
        rows = Rows(served[:fitted], lived[:fitted])
        tried[k] = rows.rough().loss, rows, lived

    first = [places] if places is not None else _rough_places(most)
    for k in first:
        rough(k)
    if places is None:  # every count between the best rough one's neighbours
        best = min(tried, key=lambda k: (tried[k][0], -k))
        at = first.index(best)
        for k in range(first[max(0, at - 1)] + 1, first[min(len(first) - 1, at + 1)]):
            if k not in tried:
                rough(k)
    # The best few on the rough grid of slowdowns, searched finely; equal errors: the more places, the less queueing assumed.
    closest = sorted(tried, key=lambda k: (tried[k][0], -k))[:NARROWED]
    solution, k = min(((tried[k][1].solve(), k) for k in closest), key=lambda found: (found[0].loss, -found[1]))
    lived = tried[k][2]
    times = solution.times
    kv = max(EngineModel.kv_tokens, *(r.input_tokens + r.output_tokens for r in served))
    model = EngineModel(max_num_seqs=k, kv_tokens=kv, decode_ms_per_token=times.decode_s * 1e3,
                        prefill_us_per_token=times.prefill_s * 1e6, batch_slowdown=times.batch_slowdown)
    service = [abs(predicted_service(r, life, times) - r.service_s) / r.service_s for r, life in zip(served, lived)]
    ttft = [abs(predicted_ttft(life, times) - r.ttft_s) / r.ttft_s for r, life in zip(served[fitted:], lived[fitted:])
            if r.ttft_s is not None and r.ttft_s > 0]
    return EngineFit(model, places is not None, most, fitted, len(served) - fitted, served[fitted].arrival_s,
                     Errors.of(service[:fitted]), Errors.of(service[fitted:]), Errors.of(ttft) if ttft else None, solution.loss,
                     tuple(order), tuple(lived))
