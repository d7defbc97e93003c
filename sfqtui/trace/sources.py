"""Event sources for the views: a trace replayed by the core, or a saved event log.

Both yield the same thing: ``(EventBatch, fraction done)`` pairs, built from Arrow tables
with the §7 columns by one converter. A live stream will be a third source.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.engine.replay import Replay, ReplayConfig
from sfqtui.core.engine.events import KINDS
from sfqtui.core.log.table import EventBatch
from sfqtui.errors import InputError
from sfqtui.trace.eventlog import KIND_NAMES, read_log_schema
from sfqtui.trace.load import LoadedTrace
from sfqtui.trace.simulate import encoder_for, replay_metadata

class EventSource(Protocol):
    scheduler: str
    title: str
    metadata: dict[str, Any]

    def batches(self) -> Iterator[tuple[EventBatch, float]]: ...


class ArrowBatcher:
    """Converts §7 Arrow tables to EventBatches, giving users codes in order of appearance."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._codes: dict[str, int] = {}

    @staticmethod
    def _floats(column: pa.ChunkedArray | pa.Array) -> array:
        values = pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)
        out = array("d")
        out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
        return out

    def convert(self, table: pa.Table) -> EventBatch:
        kinds = pc.index_in(table["kind"].cast(pa.string()), value_set=KIND_NAMES)
        if kinds.null_count:
            bad = table["kind"].filter(pc.is_null(kinds))[0].as_py()
            raise InputError(f"unknown event kind {bad!r}; known kinds: {', '.join(KINDS)}")
        users = table["user"].cast(pa.string())
        appeared = [u for u in pc.unique(users).drop_null().to_pylist() if u not in self._codes]
        for name in appeared:
            self._codes[name] = len(self.names)
            self.names.append(name)
        codes_np = pc.fill_null(pc.index_in(users, value_set=pa.array(self.names, pa.string())), -1).to_numpy(zero_copy_only=False).astype(np.int32)
        weights = [1.0] * len(appeared)
        if appeared and "weight" in table.column_names:
            column = pc.fill_null(table["weight"].cast(pa.float64()), 1.0).to_numpy(zero_copy_only=False)
            first_new = len(self.names) - len(appeared)
            found, first_row = np.unique(codes_np, return_index=True)
            where = dict(zip(found.tolist(), first_row.tolist()))
            weights = [float(column[where[first_new + i]]) for i in range(len(appeared))]
        kind_codes = array("b")
        kind_codes.frombytes(kinds.to_numpy(zero_copy_only=False).astype(np.int8).tobytes())
        user_codes = array("i")
        user_codes.frombytes(codes_np.tobytes())
        return EventBatch(
            kind=kind_codes,
            user=user_codes,
            new_users=appeared,
            new_user_weights=weights,
            request_id=table["request_id"].cast(pa.string()).to_pylist(),
            t=self._floats(table["t"]),
            cost=self._floats(table["cost"]),
            v=self._floats(table["v"]),
            meter=self._floats(table["meter"]),
            deficit=self._floats(table["deficit"]),
        )


@dataclass
class ReplaySource:
    """Replays a loaded trace with the core, a chunk at a time."""

    loaded: LoadedTrace
    config: ReplayConfig
    chunk: int = 1 << 16

    def __post_init__(self) -> None:
        self.replay = Replay(self.loaded.trace, self.config)
        self.scheduler = self.replay.scheduler.name
        self.title = f"{self.loaded.path.name}, {self.scheduler}, {self.config.slots} slot{'s' if self.config.slots != 1 else ''}"
        self.metadata = replay_metadata(self.replay, self.loaded)

    def batches(self) -> Iterator[tuple[EventBatch, float]]:
        encoder = encoder_for(self.replay, self.loaded)
        batcher = ArrowBatcher()
        total = max(1, len(self.loaded.trace))
        for arrived in self.replay.run(chunk=self.chunk):
            start, rows = self.replay.log.drain()
            if rows:
                yield batcher.convert(encoder.encode(start, rows)), arrived / total


@dataclass
class LogFileSource:
    """Streams a saved event log row group by row group."""

    path: Path
    batch_rows: int = 1 << 17

    def __post_init__(self) -> None:
        self.metadata, columns, self.scheduler = read_log_schema(self.path)
        self._columns = columns
        self.title = f"{self.path.name}, {self.scheduler} log"

    def batches(self) -> Iterator[tuple[EventBatch, float]]:
        parquet = pq.ParquetFile(self.path)
        total = max(1, parquet.metadata.num_rows)
        batcher = ArrowBatcher()
        done = 0
        for record_batch in parquet.iter_batches(batch_size=self.batch_rows, columns=self._columns):
            done += record_batch.num_rows
            yield batcher.convert(pa.Table.from_batches([record_batch])), done / total
