"""Event-log Parquet files (semantics §7): write engine chunks as row groups, read them back."""

from __future__ import annotations

import json
import math
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Sequence

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.engine.events import COMPLETE, DISPATCH, KINDS, EventRow
from sfqtui.core.log.rows import LogRows
from sfqtui.errors import InputError
from sfqtui.trace.load import read_parquet, read_parquet_header
from sfqtui.trace.schema import LOG_COLUMNS, LOG_EXTRAS, LOG_FORMAT, LOG_SCHEMA, METADATA_KEY
from sfqtui.trace.write import read_metadata

KIND_NAMES = pa.array(KINDS, pa.string())
# The engine's event row (sfqtui.core.engine.events.EventRow); Arrow reads the tuples in C.
_ROW = pa.struct([("t", pa.float64()), ("kind", pa.int8()), ("req", pa.int64()), ("cost", pa.float64()),
                  ("v", pa.float64()), ("meter", pa.float64()), ("deficit", pa.float64()), ("credit", pa.float64())])


def buffer_array(values: array, kind: pa.DataType, null: float | int) -> pa.Array:
    """A zero-copy Arrow view of a fixed-size typed array, ``null`` marking nulls."""
    plain = pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])
    if null != null:  # NaN
        return pc.if_else(pc.is_nan(plain), pa.scalar(None, kind), plain)
    return pc.if_else(pc.equal(plain, null), pa.scalar(None, kind), plain)


@dataclass(frozen=True)
class RequestColumns:
    """Per-request arrays a log takes its extra columns from (indexed by trace index)."""

    request_ids: pa.Array
    users: pa.Array
    weights: pa.Array | None = None
    ratio_used: array | None = None  # the estimator ratio that priced a request (NaN: none)
    est_output: array | None = None  # its estimated output tokens (NaN: not priced)
    output_tokens: array | None = None  # its actual output tokens (-1: unknown)


class ChunkEncoder:
    """Turns engine chunks into Arrow tables with the §7 columns and the extras we add.

    Extras: ``weight`` (the user's weight, when the trace has weights); on dispatches,
    ``ratio`` (the estimator ratio that priced it), ``est_output`` (the output tokens it
    was charged for) and ``credit`` (the DRR deficit it was sent against); on
    completions, ``output_tokens`` (the actual output, when the trace has it).
    """

    def __init__(self, scheduler: str, requests: RequestColumns, credit: bool = False) -> None:
        self.scheduler = scheduler
        self._requests = requests
        self._credit = credit

    def encode(self, start: int, rows: list[EventRow]) -> pa.Table:
        """Rows (t, kind, req, cost, v, meter, deficit, credit) from the engine, seq from ``start``."""
        return self._table(start, len(rows), pa.array(rows, type=_ROW))

    def _table(self, start: int, n: int, rows: pa.StructArray) -> pa.Table:
        t, kind, req_column, cost, v, meter, deficit, credit = rows.flatten()
        req = req_column.to_numpy(zero_copy_only=False)
        req_index = pa.array(req, mask=req < 0)
        requests = self._requests
        columns: dict[str, pa.Array] = {
            "seq": pa.array(np.arange(start, start + n, dtype=np.int64)),
            "t": t,
            "kind": KIND_NAMES.take(kind),
            "scheduler": pa.repeat(pa.scalar(self.scheduler, pa.string()), n),
            "request_id": requests.request_ids.take(req_index),
            "user": requests.users.take(req_index),
            "cost": cost,
            "v": v,
            "meter": meter,
            "deficit": deficit,
        }
        is_dispatch = pc.equal(kind, DISPATCH)
        none = pa.scalar(None, pa.float64())
        if requests.weights is not None:
            columns["weight"] = requests.weights.take(req_index)
        if requests.ratio_used is not None:
            columns["ratio"] = pc.if_else(is_dispatch, buffer_array(requests.ratio_used, pa.float64(), math.nan).take(req_index), none)
        if requests.est_output is not None:
            columns["est_output"] = pc.if_else(is_dispatch, buffer_array(requests.est_output, pa.float64(), math.nan).take(req_index), none)
        if self._credit:
            columns["credit"] = credit
        if requests.output_tokens is not None:
            actual = buffer_array(requests.output_tokens, pa.int64(), -1).take(req_index)
            columns["output_tokens"] = pc.if_else(pc.equal(kind, COMPLETE), actual, pa.scalar(None, pa.int64()))
        return pa.table(columns)


class EventLogWriter:
    """Writes row groups to a temporary file and moves it into place only on success."""

    def __init__(self, path: Path, metadata: dict[str, Any]) -> None:
        self.path = Path(path)
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
        self._metadata = {METADATA_KEY: json.dumps(metadata, sort_keys=True).encode()}
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            schema = table.schema.with_metadata(self._metadata)
            self._writer = pq.ParquetWriter(self._tmp, schema, compression="zstd")
        self._writer.write_table(table)

    def __enter__(self) -> EventLogWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._writer is not None:
            self._writer.close()
        if exc_type is None and self._writer is not None:
            os.replace(self._tmp, self.path)
        elif self._tmp.exists():
            self._tmp.unlink()


def read_log(path: Path | str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Read an event log, checking it has the §7 columns; returns the rows and our metadata."""
    path = Path(path)
    metadata, _columns, _scheduler = read_log_schema(path)
    df = read_parquet(path, what="event log")
    for column in LOG_COLUMNS:
        expected = LOG_SCHEMA.field(column).type
        actual = df.schema[column]
        numeric_ok = pa.types.is_floating(expected) and actual.is_numeric()
        integer_ok = pa.types.is_integer(expected) and actual.is_integer()
        string_ok = pa.types.is_string(expected) and actual in (pl.String, pl.Categorical)
        if not (numeric_ok or integer_ok or string_ok):
            raise InputError(f"{path}: column '{column}' has type {actual}; the event log needs {expected} (semantics §7)")
    return df, metadata


def read_log_schema(path: Path | str) -> tuple[dict[str, Any], list[str], str]:
    """Check a log's columns without reading its rows: (metadata, columns to read, scheduler)."""
    path = Path(path)
    read_parquet_header(path, what="event log")
    schema = pq.read_schema(path)
    missing = [c for c in LOG_COLUMNS if c not in schema.names]
    if missing:
        raise InputError(f"{path}: not an event log: missing column(s) {', '.join(missing)} (semantics §7)")
    metadata = read_metadata(path)
    version = metadata.get("format", 1)
    if not isinstance(version, int) or version > LOG_FORMAT:
        raise InputError(f"{path}: written by a newer sfqtui (log format {version}; this version reads formats up to "
                         f"{LOG_FORMAT}): upgrade sfqtui to open it")
    columns = list(LOG_COLUMNS) + [c for c in LOG_EXTRAS.names if c in schema.names]
    parquet = pq.ParquetFile(path)
    first = parquet.read_row_group(0, columns=["scheduler"]) if parquet.num_row_groups else None
    scheduler = first["scheduler"][0].as_py() if first is not None and first.num_rows else "unknown"
    return metadata, columns, scheduler


def log_rows(df: pl.DataFrame) -> LogRows:
    """The core's LogRows for one scheduler's log."""
    schedulers = df["scheduler"].drop_nulls().unique().to_list()
    if len(schedulers) != 1:
        raise InputError(f"an event log must hold one scheduler's events; this one has {schedulers or 'none'}")

    def column(name: str) -> list | None:
        return df[name].to_list() if name in df.columns else None

    return LogRows(
        scheduler=schedulers[0],
        seq=df["seq"].to_list(),
        t=df["t"].cast(pl.Float64).to_list(),
        kind=df["kind"].cast(pl.String).to_list(),
        user=df["user"].cast(pl.String).to_list(),
        request_id=df["request_id"].cast(pl.String).to_list(),
        cost=df["cost"].cast(pl.Float64).to_list(),
        v=df["v"].cast(pl.Float64).to_list(),
        meter=df["meter"].cast(pl.Float64).to_list(),
        deficit=df["deficit"].cast(pl.Float64).to_list(),
        weight=column("weight"),
        credit=column("credit"),
    )
