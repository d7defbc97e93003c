"""A sweep's rows as a table: the same columns for every run, failed or not, for JSON and Parquet."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from sfqtui.paths import atomic_output
from sfqtui.sweep.runs import Row

USER_FIGURES = pl.Struct({
    "user": pl.String, "dispatched": pl.Int64, "charged": pl.Float64, "share_congested": pl.Float64,
    "wait_p50": pl.Float64, "wait_p99": pl.Float64,
})
TTFT_FIGURES = pl.Struct({"user": pl.String, "ttft_p50": pl.Float64, "ttft_p99": pl.Float64, "ttft_mean": pl.Float64})
SCHEMA: dict[str, pl.DataType] = {
    "trace": pl.String(), "scheduler": pl.String(), "slots": pl.Int64(), "estimator": pl.String(),
    "ratio_scope": pl.String(), "ratio_update": pl.String(), "replicas": pl.Int64(), "router": pl.String(),
    "share": pl.String(), "seed": pl.Int64(), "requests": pl.Int64(), "jain": pl.Float64(),
    "worst_gap": pl.Float64(), "worst_gap_ahead": pl.String(), "worst_gap_behind": pl.String(),
    "worst_gap_start_t": pl.Float64(), "worst_gap_end_t": pl.Float64(), "worst_gap_exact": pl.Boolean(),
    "congested_dispatches": pl.Int64(), "users": pl.List(USER_FIGURES), "worst_gap_cmax": pl.Float64(),
    "drift_cmax": pl.Float64(), "stranded": pl.Float64(), "makespan_ratio": pl.Float64(),
    # on the engine model (--engines): the placement, the worst gap at engine start and the prefix cache's figures (semantics §14)
    "engines": pl.Int64(), "placement": pl.String(), "worst_gap_at_start": pl.Float64(), "prefix_hit_rate": pl.Float64(),
    "prefill_saved_tokens": pl.Int64(), "idle_while_queued_s": pl.Float64(), "ttft": pl.List(TTFT_FIGURES),
    "seconds": pl.Float64(), "error": pl.String(),
}


def complete_rows(rows: Sequence[Row]) -> list[Row]:
    """Every row with every column, in schema order; a failed run's figures are None."""
    return [{column: row.get(column) for column in SCHEMA} for row in rows]


def write_results(rows: Sequence[Row], path: Path) -> None:
    with atomic_output(path) as tmp:
        pl.DataFrame(complete_rows(rows), schema=SCHEMA).write_parquet(tmp)
