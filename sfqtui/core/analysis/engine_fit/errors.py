"""Absolute percentage errors, summed up as people read them: a median and a 90th percentile."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Errors:
    """Absolute percentage errors (|predicted − measured| / measured) over ``requests``, as fractions."""

    requests: int
    median: float | None
    p90: float | None

    @classmethod
    def of(cls, errors: Sequence[float]) -> Errors:
        return cls(len(errors), quantile(errors, 0.5), quantile(errors, 0.9))

    def as_dict(self) -> dict[str, float | int | None]:
        return {"requests": self.requests, "median": self.median, "p90": self.p90}


def quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile, interpolated between the two nearest ranks (numpy's default); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)
