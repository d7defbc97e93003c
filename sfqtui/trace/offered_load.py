"""How much of a pool a trace keeps busy, and what one slot would make of it.

The offered load is the total service time over the span of arrivals: the number of
slots the trace keeps busy on average. A pool of ``HEADROOM`` times that keeps up with
the trace, and its bursts still queue; the importers record it as the trace's slot
suggestion. On one slot every work-conserving scheduler finishes at the same time, the
makespan: the latest over requests k (in arrival order) of a_k plus the service of k
and of everything after it.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sfqtui.core.pricing.service import TokenServiceModel

HEADROOM = 1.25  # a pool busy 80% of the time on average


def service_seconds(model: TokenServiceModel, columns: Collection[str]) -> pl.Expr:
    """Each request's service time as a replay computes it (sfqtui.core.pricing.service):
    the ``service_s`` column when there is one, else the token model on the columns there are."""
    if "service_s" in columns:
        return pl.col("service_s").cast(pl.Float64, strict=False)

    def tokens(name: str) -> pl.Expr:
        return pl.col(name).cast(pl.Float64, strict=False)

    output = pl.repeat(float(model.default_output_tokens), pl.len())  # a value per row, also with no token column
    for name in ("max_tokens", "output_tokens"):  # the recorded output, else the cap, else the default
        if name in columns:
            output = tokens(name).fill_null(output)
    prompt = tokens("input_tokens").fill_null(0.0).clip(lower_bound=0.0) if "input_tokens" in columns else pl.lit(0.0)
    return model.overhead_s + prompt / model.prefill_tps + output / model.decode_tps


def suggested_slots_for(total_service_s: float, span_s: float) -> int | None:
    """The slot count to suggest for a trace (None when its arrivals span no time)."""
    if not span_s > 0:
        return None
    return max(1, math.ceil(total_service_s / span_s * HEADROOM))


@dataclass(frozen=True)
class OneSlot:
    """What one slot makes of a trace."""

    span_s: float  # from the first arrival to the last
    makespan_s: float  # when the last request completes on one slot
    total_service_s: float

    @property
    def suggested(self) -> int | None:
        return suggested_slots_for(self.total_service_s, self.span_s)

    @property
    def offered_load(self) -> float | None:
        return self.total_service_s / self.span_s if self.span_s > 0 else None


def one_slot(path: Path, model: TokenServiceModel) -> OneSlot:
    """The span, total service and one-slot makespan of a validated trace file."""
    frame = pl.scan_parquet(path)
    arrival = pl.col("arrival_s").cast(pl.Float64)
    service = service_seconds(model, frame.collect_schema().names())
    ordered = frame.select(arrival.alias("a"), service.alias("s")).sort("a", maintain_order=True)
    a, s = pl.col("a"), pl.col("s")
    found = ordered.select(
        (a.max() - a.min()).alias("span"),
        s.sum().alias("total"),
        (a + s.reverse().cum_sum().reverse()).max().alias("makespan"),
    ).collect().row(0, named=True)
    return OneSlot(found["span"], found["makespan"], found["total"])


def duration(seconds: float) -> str:
    """A duration as people say it: 45.2 s, 58.6 min, 33.3 h, 225.5 days."""
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"
