"""A replayed log with the start rows of an engine behind it, for the views of fairness at engine start.

The replay (`sfqtui simulate`) sends every request at once (slots to spare); the engine, added
afterwards, runs ``places`` requests at a time for ``run_s`` each, in dispatch order (a FCFS
queue), and a request never starts after the replay completed it.
"""

from __future__ import annotations

import heapq
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from sfqtui.cli.app import app


def heavy_and_light(folder: Path) -> Path:
    """'heavy' sends 8 requests at t = 0, 'light' 2 at t = 0.5; each costs 1 and takes 4 s."""
    requests = [("heavy", 0.0)] * 8 + [("light", 0.5)] * 2
    trace = folder / "heavy-and-light.parquet"
    pl.DataFrame({"request_id": [f"r{k}" for k in range(len(requests))], "user": [u for u, _ in requests],
                  "arrival_s": [t for _, t in requests], "cost": [1.0] * len(requests), "service_s": [4.0] * len(requests)}).write_parquet(trace)
    return trace


def with_engine_starts(trace: Path, log: Path, places: int = 2, run_s: float = 1.0, slots: int = 16) -> Path:
    """The replay of ``trace`` on ``slots`` slots written to ``log``, with the start rows of the engine (module doc)."""
    result = CliRunner().invoke(app, ["simulate", str(trace), "--slots", str(slots), "-o", str(log)])
    assert result.exit_code == 0, result.output
    table = pq.read_table(log)
    events = pl.from_arrow(table)
    assert isinstance(events, pl.DataFrame)
    completed = dict(events.filter(pl.col("kind") == "complete").select("request_id", "t").iter_rows())
    free = [0.0] * places  # when each place frees
    starts = []
    for seq, t, request, user in events.filter(pl.col("kind") == "dispatch").select("seq", "t", "request_id", "user").iter_rows():
        start = min(max(t, heapq.heappop(free)), completed[request])
        heapq.heappush(free, start + run_s)
        # Right after its dispatch when it starts then; otherwise before anything else at its time.
        starts.append({"seq": seq + 0.5 if start == t else -1.0, "t": start, "kind": "start", "scheduler": events["scheduler"][0],
                       "request_id": request, "user": user, "upstream": "0"})
    ordered = pl.concat([events.with_columns(pl.col("seq").cast(pl.Float64)), pl.DataFrame(starts)], how="diagonal_relaxed")
    ordered = ordered.sort("t", "seq").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("seq"))
    schema = pa.schema([*table.schema, pa.field("upstream", pa.string())], metadata=table.schema.metadata)
    pq.write_table(ordered.select(schema.names).to_arrow().cast(schema), log)
    return log
