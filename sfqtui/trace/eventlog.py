"""Event-log Parquet files (semantics §7): write engine chunks as row groups, read them back."""

from __future__ import annotations

import json
import math
import queue
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.events import CHARGES, COMPLETE, DISPATCH, KINDS, REASONS, START, EventRows
from sfqtui.core.log.rows import LogRows
from sfqtui.core.pricing.estimator import Pricing
from sfqtui.errors import InputError
from sfqtui.paths import atomic_output
from sfqtui.trace.load import read_batches, read_parquet, read_parquet_header, readable
from sfqtui.trace.schema import CACHED, LOG_COLUMNS, LOG_EXTRAS, LOG_SCHEMA, METADATA_KEY, NEWEST_LOG_FORMAT, PREDICTED_CACHED
from sfqtui.trace.write import read_metadata

KIND_NAMES = pa.array(KINDS, pa.string())
REASON_NAMES = pa.array(REASONS, pa.string())
_NUMPY = {"d": np.float64, "b": np.int8, "q": np.int64, "i": np.int32}
# A recording's figures that a replay of it as it ran writes, each on the rows the proxy's stream carried it on.
RECORDED_FIGURES = {CACHED: COMPLETE, PREDICTED_CACHED: DISPATCH}


def buffer_array(values: array | np.ndarray, kind: pa.DataType, null: float | int) -> pa.Array:
    """A zero-copy Arrow view of a fixed-size typed array, ``null`` marking nulls."""
    plain = pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])
    if null != null:  # NaN
        return pc.if_else(pc.is_nan(plain), pa.scalar(None, kind), plain)
    return pc.if_else(pc.equal(plain, null), pa.scalar(None, kind), plain)


@dataclass(frozen=True)
class RequestColumns:
    """Columns of consecutive requests, the first being request ``start`` of the trace, that a
    log takes its request ids and extra columns from (``recorded``: a recording's RECORDED_FIGURES)."""

    start: int
    request_ids: pa.Array
    weights: pa.Array | None = None
    output_tokens: pa.Array | None = None  # the actual output tokens (null: unknown)
    recorded: Mapping[str, pa.Array] = field(default_factory=dict)

    @classmethod
    def of(cls, start: int, table: pa.Table, output_tokens: array | None) -> RequestColumns:
        """From a table with request_id and (when the trace has it) weight, and the core's output tokens (-1: unknown)."""
        return cls(
            start=start,
            request_ids=table["request_id"].combine_chunks(),
            weights=table["weight"].combine_chunks() if "weight" in table.column_names else None,
            output_tokens=buffer_array(output_tokens, pa.int64(), -1) if output_tokens is not None else None,
            recorded={name: table[name].combine_chunks() for name in RECORDED_FIGURES if name in table.column_names},
        )

    def __len__(self) -> int:
        return len(self.request_ids)


def _gathered(parts: Sequence[RequestColumns], req: np.ndarray) -> tuple[RequestColumns, pa.Array]:
    """The parts as one set of columns, and the position there of each request (null for -1)."""
    if len(parts) == 1:
        whole = parts[0]
        return whole, pa.array(req - whole.start, mask=req < 0)
    starts = np.array([p.start for p in parts], dtype=np.int64)
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]], dtype=np.int64)
    k = np.searchsorted(starts, req, side="right") - 1
    positions = req - starts[k] + offsets[k]

    def joined(name: str) -> pa.Array | None:
        columns = [getattr(p, name) for p in parts]
        return None if columns[0] is None else pa.concat_arrays(columns)

    recorded = {name: pa.concat_arrays([p.recorded[name] for p in parts]) for name in parts[0].recorded}
    whole = RequestColumns(0, joined("request_ids"), joined("weights"), joined("output_tokens"), recorded)
    return whole, pa.array(positions, mask=req < 0)


def _priced(kind: np.ndarray, req: np.ndarray, by_request: dict[int, float]) -> pa.Array:
    """On dispatch rows the value ``by_request`` holds for the request; null elsewhere."""
    values = np.full(len(kind), np.nan)
    dispatches = kind == DISPATCH
    reqs = req[dispatches].tolist()
    values[dispatches] = np.fromiter(map(by_request.get, reqs, repeat(math.nan)), dtype=np.float64, count=len(reqs))
    return buffer_array(values, pa.float64(), math.nan)


def packed_columns(rows: EventRows) -> dict[str, np.ndarray]:
    """Every field the rows hold as a numpy column (one strided copy each, no Python object
    per event), CHARGES NaN outside dispatch rows; a field the scheduler never fills is left out."""
    layout = rows.layout
    fields = layout.fields()
    packed = np.frombuffer(rows.data, np.dtype({
        "names": [name for name, _, _ in fields], "formats": [_NUMPY[code] for _, code, _ in fields],
        "offsets": [offset for _, _, offset in fields], "itemsize": layout.struct.size,
    }), count=len(rows))
    columns = {name: np.ascontiguousarray(packed[name]) for name, _, _ in fields}
    uncharged = columns["kind"] != DISPATCH
    for name in CHARGES:
        if name in columns:
            columns[name][uncharged] = np.nan
    return columns


def _null_below_0(codes: pa.Array) -> pa.Array:
    return pc.if_else(pc.less(codes, 0), pa.scalar(None, codes.type), codes)


class ChunkEncoder:
    """Turns engine chunks into Arrow tables with the §7 columns and the extras we add.

    Extras: ``weight`` (the user's weight, when the trace has weights); on dispatches,
    ``ratio`` (the estimator ratio that priced it), ``est_output`` (the output tokens it
    was charged for), both when an estimator was in use, and ``credit`` (the DRR deficit
    it was sent against); on completions, ``output_tokens`` (the actual output, when the
    trace has it). A replay with the engine model adds ``upstream`` (the engine, "0", "1",
    ...: on dispatch, start and complete rows), ``limit`` and ``reason`` (on limit rows), and
    ``cached_tokens`` on start rows when its engines model their prefix caches (semantics §14).
    A replay of a proxy's recording names its upstreams by address instead (``upstreams``,
    ``ReplayPlan.upstream_names``): on limit rows when it follows the recorded capacity, and on
    dispatch and start rows when it replays the recording as it ran (``as_ran``), with its own
    figures on the rows the proxy's stream carried them on (``RECORDED_FIGURES``).
    """

    def __init__(self, scheduler: str, users: Sequence[str], credit: bool = False, upstreams: Sequence[str] | None = None,
                 as_ran: bool = False) -> None:
        """``users``: the trace's users by code (the rows name them by code); ``upstreams``: the upstreams
        by code, likewise (None: the rows' codes are the engines' numbers); ``as_ran``: a replay of a
        recording as it ran, whose rows name its upstreams (``ReplayPlan.upstreams_recorded``)."""
        self._credit = credit
        self._as_ran = as_ran
        self._scheduler = pa.array([scheduler], pa.string())
        self._users = pa.array(users, pa.string())
        self._upstreams = None if upstreams is None else pa.array(upstreams, pa.string())

    def encode(self, rows: EventRows, parts: Sequence[RequestColumns], pricing: Pricing | None,
               cached: dict[int, int] | None = None) -> pa.Table:
        """The engine's packed rows as a table, each field viewed as a column (no Python
        object per event); ``parts``: columns covering every request the rows mention, in
        order; ``pricing``: what priced their dispatches (None: no estimator); ``cached``: the
        cached prompt tokens of the requests that started (None: the engines model no prefix cache)."""
        layout, n = rows.layout, len(rows)
        packed = packed_columns(rows)

        def number(name: str) -> pa.Array:
            """A float field, NaN as null; a field this scheduler never fills is all null."""
            return pa.array(packed[name], from_pandas=True) if name in packed else pa.nulls(n, pa.float64())

        kinds, req = packed["kind"], packed["req"]
        kind = pa.array(kinds)
        requests, req_index = _gathered(parts, req)
        columns: dict[str, pa.Array] = {
            "seq": pa.array(np.arange(rows.start, rows.start + n, dtype=np.int64)),
            "t": pa.array(packed["t"]),
            "kind": pa.DictionaryArray.from_arrays(kind, KIND_NAMES),
            "scheduler": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int8)), self._scheduler),
            "request_id": requests.request_ids.take(req_index),
            "user": pa.DictionaryArray.from_arrays(_null_below_0(pa.array(packed["user"])), self._users),
            "cost": number("cost"),
            "v": number("v"),
            "meter": number("meter"),
            "deficit": number("deficit"),
        }
        if layout.present("replica"):
            columns["replica"] = _null_below_0(pa.array(packed["replica"]))
        if requests.weights is not None:
            columns["weight"] = requests.weights.take(req_index)
        if pricing is not None:
            columns["ratio"] = _priced(kinds, req, pricing.ratio)
            columns["est_output"] = _priced(kinds, req, pricing.est_output)
        if self._credit:
            columns["credit"] = number("credit")
        if requests.output_tokens is not None:
            actual = requests.output_tokens.take(req_index)
            columns["output_tokens"] = pc.if_else(pc.equal(kind, COMPLETE), actual, pa.scalar(None, pa.int64()))
        if layout.present("upstream"):
            codes = _null_below_0(pa.array(packed["upstream"]))
            columns["upstream"] = codes.cast(pa.string()) if self._upstreams is None else self._upstreams.take(codes)
            columns["limit"] = _null_below_0(pa.array(packed["limit"]))
            columns["reason"] = pa.DictionaryArray.from_arrays(_null_below_0(pa.array(packed["reason"])), REASON_NAMES)
        if cached is not None:
            columns["cached_tokens"] = _on_starts(kinds, req, cached)
        if self._as_ran:
            for name, values in requests.recorded.items():
                columns[name] = pc.if_else(pc.equal(kind, RECORDED_FIGURES[name]), values.take(req_index), pa.scalar(None, pa.int64()))
        return pa.table(columns)


def _on_starts(kind: np.ndarray, req: np.ndarray, by_request: dict[int, int]) -> pa.Array:
    """On start rows the value ``by_request`` holds for the request; null elsewhere."""
    values = np.full(len(kind), -1, dtype=np.int64)
    starts = kind == START
    reqs = req[starts].tolist()
    values[starts] = np.fromiter(map(by_request.get, reqs, repeat(-1)), dtype=np.int64, count=len(reqs))
    return buffer_array(values, pa.int64(), -1)


# The columns with few distinct values, which Parquet dictionary-encodes. Every other column
# is nearly all distinct (ids, times, meters): trying a dictionary there only costs time
# before the writer falls back to plain pages (and those come out larger).
_DICTIONARY_ENCODED = ("kind", "scheduler", "user", "replica", "weight", "upstream", "reason")
# seq counts up by one: delta-encoded, a row group's seq column is a few bytes to compress.
_ENCODINGS = {"seq": "DELTA_BINARY_PACKED"}


def _with_statistics(schema: pa.Schema) -> list[str]:
    """The columns whose row groups record their minimum and maximum: the numbers, by which a
    reader can skip row groups (a seq or a time range). A string column's bounds say little,
    and finding them in every value is a fifth of the writer's work."""
    return [field.name for field in schema if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                                                   or pa.types.is_dictionary(field.type))]


class EventLogWriter:
    """Writes row groups to a temporary file and moves it into place only on success.

    Row groups are compressed and written on a thread of their own (Arrow releases the GIL
    for that), so a replay goes on while the last chunk is written; at most one waits.

    A table's string columns may come dictionary-encoded (a code per row and the names once,
    as the encoder makes them): Parquet then takes the codes as they are. The file records
    them as plain strings (no Arrow schema is stored), so every reader gets strings back; the
    metadata goes in the footer.
    """

    def __init__(self, path: Path, metadata: dict[str, Any]) -> None:
        self.path = Path(path)
        self._output: AbstractContextManager[str] | None = None  # where the file is written until it is whole
        self._given = dict(metadata)
        self._added: dict[str, Any] = {}  # metadata learnt while writing, put in the footer at the end
        self._writer: pq.ParquetWriter | None = None
        self._pending: queue.Queue[pa.Table | None] = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._write_pending, name="event-log writer", daemon=True)
        self._failure: BaseException | None = None

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            self._open(table.schema)
        self._raise_failure()
        self._pending.put(table)

    def _open(self, schema: pa.Schema) -> None:
        output = atomic_output(self.path)
        try:
            dictionary = [name for name in _DICTIONARY_ENCODED if name in schema.names]
            self._writer = pq.ParquetWriter(output.__enter__(), schema, compression="zstd", use_dictionary=dictionary, store_schema=False,
                                            write_statistics=_with_statistics(schema), column_encoding=_ENCODINGS if "seq" in schema.names else None)
        except BaseException as exc:
            output.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._output = output
        self._thread.start()

    def _write_pending(self) -> None:
        while (table := self._pending.get()) is not None:
            if self._failure is None:
                try:
                    assert self._writer is not None, "write() opens the writer before it queues a table"
                    self._writer.write_table(table)
                except BaseException as exc:  # raised in the caller's thread at its next call
                    self._failure = exc

    def add_metadata(self, added: dict[str, Any]) -> None:
        """Metadata known only once rows are written (the file's footer gets it when the writer closes)."""
        self._added.update(added)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def __enter__(self) -> EventLogWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._output is None:
            return
        try:
            self._pending.put(None)
            self._thread.join()
            self._writer.add_key_value_metadata(  # type: ignore[union-attr]  # set together with _output
                {METADATA_KEY: json.dumps(self._given | self._added, sort_keys=True).encode()})
            self._writer.close()  # type: ignore[union-attr]  # set together with _output
        except BaseException as error:  # e.g. the disk filled up while the footer was written
            self._failure = self._failure or error
        failure = exc or self._failure
        # Moves the file into place, or (given the failure) removes it; either way nothing partial stays.
        self._output.__exit__(type(failure) if failure else None, failure, failure.__traceback__ if failure else None)
        if exc_type is None:
            self._raise_failure()


# The columns the audits read (sfqtui.core.log.rows.LogRows), with the types they are read as.
_AUDITED: dict[str, pa.DataType | None] = {
    "seq": None, "t": pa.float64(), "kind": pa.string(), "user": pa.string(), "request_id": pa.string(),
    "cost": pa.float64(), "v": pa.float64(), "meter": pa.float64(), "deficit": pa.float64(),
    "weight": pa.float64(), "credit": pa.float64(), "output_tokens": None, "replica": None,
    "since_seq": None,
}


def read_log(path: Path | str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Read an event log, checking it has the §7 columns; returns the rows and our metadata."""
    path = Path(path)
    metadata, _columns, _scheduler = read_log_schema(path)
    df = read_parquet(path, what="event log")
    _check_types(path, df.schema)
    return df, metadata


def _check_types(path: Path, schema: Mapping[str, pl.DataType]) -> None:
    for column in LOG_COLUMNS:
        expected = LOG_SCHEMA.field(column).type
        actual = schema[column]
        numeric_ok = pa.types.is_floating(expected) and actual.is_numeric()
        integer_ok = pa.types.is_integer(expected) and actual.is_integer()
        string_ok = pa.types.is_string(expected) and actual in (pl.String, pl.Categorical)
        if not (numeric_ok or integer_ok or string_ok):
            raise InputError(f"{path}: column '{column}' has type {actual}; the event log needs {expected} (semantics §7)")


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
    if not isinstance(version, int) or version > NEWEST_LOG_FORMAT:
        raise InputError(f"{path}: written by a newer sfqtui (log format {version}; this version reads formats up to "
                         f"{NEWEST_LOG_FORMAT}): upgrade sfqtui to open it")
    columns = list(LOG_COLUMNS) + [c for c in LOG_EXTRAS.names if c in schema.names]
    first = next(pq.ParquetFile(path).iter_batches(batch_size=1, columns=["scheduler"]), None)  # its first page only
    scheduler = first["scheduler"][0].as_py() if first is not None and first.num_rows else "unknown"
    return metadata, columns, scheduler


class RowCheck:
    """What the dashboard could not show in a log's rows, checked batch by batch as they are
    read (InputError naming the row): an unknown event kind, more than one scheduler."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.rows = 0  # rows checked so far
        self._schedulers: set[str] = set()

    def check(self, batch: pa.RecordBatch | pa.Table) -> None:
        unknown = pc.is_null(pc.index_in(batch["kind"].cast(pa.string()), value_set=KIND_NAMES))
        if pc.any(unknown).as_py():
            row = pc.index(unknown, True).as_py()
            raise InputError(f"{self.path}: row {self.rows + row} (counting from 0): unknown event kind {batch['kind'][row].as_py()!r}; "
                             f"known kinds: {', '.join(KINDS)} (semantics §7)")
        self._schedulers.update(pc.unique(batch["scheduler"].cast(pa.string())).drop_null().to_pylist())
        if len(self._schedulers) > 1:
            raise InputError(f"{self.path}: an event log must hold one scheduler's events; this one has {', '.join(sorted(self._schedulers))}")
        self.rows += batch.num_rows


def validate_log(path: Path | str, head: int | None = None, batch_rows: int = 1 << 17) -> None:
    """Read an event log, the columns a dashboard shows, and raise InputError for what it could
    not show: missing columns, wrong types, a newer format (all from the footer), and in its
    rows (the first ``head`` only, if given: the rest is checked as it is read) an unreadable
    page, an unknown event kind, more than one scheduler. Violations of the scheduler's rules
    are not refused here: showing them is what the dashboard and `check` are for."""
    path = Path(path)
    _metadata, columns, _first = read_log_schema(path)
    _check_types(path, pl.read_parquet_schema(path))
    rows = RowCheck(path)
    for batch in read_batches(path, columns, batch_rows if head is None else min(head, batch_rows)):
        rows.check(batch)
        if head is not None and rows.rows >= head:
            return


def output_weight_of(metadata: dict[str, Any]) -> float | None:
    """The estimator's output weight b a log was made with (VTC's completion charge, §9),
    when its metadata records one."""
    estimator = metadata.get("estimator")
    weight = estimator.get("output_weight") if isinstance(estimator, dict) else None
    return float(weight) if isinstance(weight, (int, float)) else None


def log_rows(df: pl.DataFrame) -> LogRows:
    """The core's LogRows for one scheduler's log."""
    schedulers = df["scheduler"].drop_nulls().unique().to_list()
    return rows_of(_only_scheduler(schedulers), df.to_arrow())


def iter_log_rows(path: Path | str, batch_rows: int = 1 << 17) -> Iterator[LogRows]:
    """The log at ``path`` as consecutive LogRows of up to ``batch_rows`` events, read batch
    by batch and only the columns the audits read, so memory holds one batch at a time.
    The file is checked (columns, types, format, one scheduler) before this returns."""
    path = Path(path)
    _metadata, columns, _first = read_log_schema(path)
    _check_types(path, pl.read_parquet_schema(path))
    parquet = pq.ParquetFile(path)
    schedulers: set[str] = set()
    for group in range(parquet.num_row_groups):
        schedulers.update(pc.unique(parquet.read_row_group(group, columns=["scheduler"])["scheduler"]).drop_null().to_pylist())
    scheduler = _only_scheduler(sorted(schedulers))
    audited = [c for c in columns if c in _AUDITED]
    return (
        rows_of(scheduler, batch)
        for group in range(parquet.num_row_groups)
        # One reader per row group: a reader over the whole file keeps memory for every row
        # group it has read until it is dropped (pyarrow 26), so the whole log would add up.
        for batch in readable(path, parquet.iter_batches(batch_size=batch_rows, row_groups=[group], columns=audited))
    )


def has_kind(path: Path | str, kind: str) -> bool:
    """Whether the log at ``path`` has a row of ``kind``, reading only its kind column, row group by row group."""
    parquet = pq.ParquetFile(path)
    return any(pc.any(pc.equal(parquet.read_row_group(group, columns=["kind"])["kind"].cast(pa.string()), kind)).as_py()
               for group in range(parquet.num_row_groups))


def _only_scheduler(schedulers: Sequence[str]) -> str:
    if len(schedulers) != 1:
        raise InputError(f"an event log must hold one scheduler's events; this one has {list(schedulers) or 'none'}")
    return schedulers[0]


def rows_of(scheduler: str, events: pa.Table | pa.RecordBatch) -> LogRows:
    """LogRows of a table or batch of log rows, each audited column as a list (nulls as None)."""

    def column(name: str) -> list | None:
        if name not in events.column_names:
            return None
        values, kind = events[name], _AUDITED[name]
        return (values if kind is None or values.type == kind else values.cast(kind)).to_pylist()

    return LogRows(scheduler, **{name: column(name) for name in _AUDITED})  # type: ignore[arg-type]  # each column as its own list: LogRows names their types
