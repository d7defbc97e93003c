"""A trace file read a chunk at a time in replay order, for replays that must not hold it whole."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.requests.trace import OPTIONAL_COLUMNS, POLICY_COLUMNS, Trace
from sfqtui.trace.blocks import block_tokens
from sfqtui.trace.load import (
    LOG_WRITER_COLUMNS,
    TraceSummary,
    frame_of,
    normalise,
    read_batches,
    read_parquet,
    to_core,
    validate,
    with_schema_types,
)
from sfqtui.trace.run_metadata import recorded_limits, suggested_slots
from sfqtui.trace.write import read_metadata

CHUNK_ROWS = 1 << 16


@dataclass(frozen=True)
class TraceChunk:
    """Consecutive requests of a trace in replay order: the core's view, and their request
    ids, users and weights (when present) as Arrow columns for the log writer."""

    start: int  # the index of the first request in the whole trace
    trace: Trace
    table: pa.Table


@dataclass(frozen=True)
class TraceSource:
    """A validated trace file as the core's RequestChunks (sfqtui.core.requests.chunks).

    A file whose rows are already in arrival order (generated and imported traces are)
    is read a chunk at a time; any other is read whole and sorted first.
    """

    path: Path
    summary: TraceSummary
    metadata: dict[str, Any]
    chunk_rows: int = CHUNK_ROWS

    @property
    def users(self) -> list[str]:
        return self.summary.users

    @property
    def upstreams(self) -> list[str]:
        return self.summary.upstreams

    @property
    def columns(self) -> frozenset[str]:
        return frozenset(c for c in self.summary.columns if c in OPTIONAL_COLUMNS or c in POLICY_COLUMNS)

    @property
    def suggested_slots(self) -> int | None:
        return suggested_slots(self.metadata)

    @property
    def recorded_limits(self) -> RecordedLimits | None:
        return recorded_limits(self.metadata)

    def __len__(self) -> int:
        return self.summary.rows

    def weights_by_code(self) -> dict[int, float]:
        index = {name: code for code, name in enumerate(self.users)}
        return {index[name]: w for name, w in self.summary.weights.items()}

    def chunks(self) -> Iterator[TraceChunk]:
        """The requests in replay order, ``chunk_rows`` a chunk (the last may hold fewer)."""
        summary = self.summary
        start = 0
        for table in self._tables(self.chunk_rows):
            trace = to_core(table, summary.users, summary.models, summary.weights, block_tokens(self.metadata), summary.upstreams)
            yield TraceChunk(start, trace, table.select([c for c in LOG_WRITER_COLUMNS if c in summary.columns]))
            start += table.num_rows

    def _tables(self, rows: int) -> Iterator[pa.Table]:
        """Consecutive slices of the trace in replay order and schema types."""
        if not self.summary.in_order:
            whole = normalise(read_parquet(self.path)).to_arrow()
            for start in range(0, whole.num_rows, rows):
                yield whole.slice(start, rows)
            return
        for table in _exactly(read_batches(self.path, self.summary.columns, rows), rows):
            yield with_schema_types(frame_of(table)).to_arrow()


def _exactly(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The batches' rows regrouped into tables of exactly ``rows`` rows (the last may hold fewer)."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        while held >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, held = rest.to_batches(), rest.num_rows
    if held:
        yield pa.Table.from_batches(pending)


def open_trace(path: Path | str, chunk_rows: int = CHUNK_ROWS) -> TraceSource:
    """Validate a trace file (InputError names the first offending row) and open it for reading in chunks."""
    path = Path(path)
    return TraceSource(path, validate(path), read_metadata(path), chunk_rows)
