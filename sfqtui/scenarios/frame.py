"""Helpers that turn generated columns into a trace frame."""

from __future__ import annotations

import numpy as np
import polars as pl


def trace_frame(user: np.ndarray | list[str], arrival_s: np.ndarray | list[float], **columns: object) -> pl.DataFrame:
    """A trace sorted by arrival with request ids ``r000001``... in that order."""
    frame = pl.DataFrame({"user": user, "arrival_s": np.asarray(arrival_s, dtype=np.float64), **columns})
    frame = frame.with_row_index("__row").sort(["arrival_s", "__row"]).drop("__row")
    width = max(6, len(str(frame.height)))
    ids = pl.int_range(1, frame.height + 1, eager=True).cast(pl.String).str.zfill(width)
    return frame.with_columns(request_id=pl.lit("r") + ids).select(["request_id", *[c for c in frame.columns]])


def backlog(user: str, count: int, start: float, cost: float, service_s: float) -> dict[str, list]:
    """``count`` requests from one user all arriving at ``start`` with fixed cost and service time."""
    return {
        "user": [user] * count,
        "arrival_s": [start] * count,
        "cost": [cost] * count,
        "service_s": [service_s] * count,
    }


def concat(*parts: dict[str, list]) -> dict[str, list]:
    keys = parts[0].keys()
    return {k: [x for part in parts for x in part[k]] for k in keys}


def user_names(count: int, prefix: str = "user") -> list[str]:
    width = len(str(count - 1))
    return [f"{prefix}-{i:0{width}d}" for i in range(count)]
