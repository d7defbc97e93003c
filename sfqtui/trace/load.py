"""Load a trace file and refuse a bad one with one line: column, first offending row, rule.

Validation reads the file a batch at a time: checking a trace of any length holds one
batch and 8 bytes a request (a hash of its id), never the whole file.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.requests.trace import NULL, Trace
from sfqtui.errors import InputError
from sfqtui.trace.blocks import block_tokens, checked_block_tokens, prefix_blocks_of
from sfqtui.trace.rules import FIRST_WEIGHT, Rule, rules_for
from sfqtui.trace.run_metadata import recorded_limits, suggested_slots
from sfqtui.trace.schema import CACHED, ENGINE_START, PREDICTED_CACHED, PREFIX_BLOCKS, REQUIRED, TOKEN_COLUMNS, TRACE_COLUMNS, UPSTREAM
from sfqtui.trace.write import read_metadata

_STRING_TYPES = (pl.String, pl.Categorical, pl.Enum)
KNOWN_COLUMNS = (*TRACE_COLUMNS, PREFIX_BLOCKS, ENGINE_START, UPSTREAM, PREDICTED_CACHED, CACHED)  # what a trace file's reader reads of it, in this order
_SAID = (ENGINE_START, PREDICTED_CACHED, CACHED)  # a recording's columns read as absent when no row says a value


@dataclass(frozen=True)
class LoadedTrace:
    """A validated trace: the core's view, and the request ids, users and weights (when
    present) as Arrow columns in replay order, for the log writer."""

    path: Path
    trace: Trace
    table: pa.Table
    metadata: dict[str, Any]

    @property
    def suggested_slots(self) -> int | None:
        return suggested_slots(self.metadata)

    @property
    def recorded_limits(self) -> RecordedLimits | None:
        return recorded_limits(self.metadata)

    @property
    def measured_service(self) -> bool:
        """Its service_s is how long each request took: imported from a gateway's log
        (sfqtui.importers.gateway) or recorded by the proxy, not set by a scenario or by hand."""
        made_by = (self.metadata.get("service"), self.metadata.get("source"))
        return self.trace.service_s is not None and (made_by[0] == "measured" or made_by[1] == "sfqtui proxy")



def frame_of(table: pa.Table | pa.RecordBatch) -> pl.DataFrame:
    """A polars frame of an Arrow table or batch (polars types from_arrow as frame or series; only an array gives a series)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame

@dataclass(frozen=True)
class TraceSummary:
    """What validating a trace found out about it: enough to read it a chunk at a time."""

    rows: int
    columns: tuple[str, ...]  # the trace columns the file has (semantics §1 order; a recording's only with a value in them)
    users: list[str]  # the distinct users in code-point order: user codes index this
    models: list[str]  # likewise the distinct models
    upstreams: list[str]  # likewise the distinct upstreams of a recording
    weights: dict[str, float]  # per user, when the trace has weights
    in_order: bool  # arrival_s never decreases down the file: file order is replay order


def read_parquet_header(path: Path, what: str = "trace") -> pq.FileMetaData:
    """The file's Parquet footer, or InputError naming what is wrong with the file."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a Parquet {what} file")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty, expected a Parquet {what} file")
    try:
        return pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError) as exc:
        hint = "; to convert a CSV or JSONL file to a trace, use `sfqtui import csv` or `sfqtui import jsonl`" if "trace" in what else ""
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]}){hint}") from None


def read_parquet(path: Path, what: str = "trace", trace_columns: bool = False) -> pl.DataFrame:
    """Read a Parquet file (with ``trace_columns``, only those of semantics §1 it has) or
    raise InputError naming what is wrong with it."""
    read_parquet_header(path, what)
    try:
        columns = list(_present(pl.read_parquet_schema(path))) if trace_columns else None
        return pl.read_parquet(path, columns=columns)
    except (pa.ArrowInvalid, OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None


def _where(path: Path, column: str, row: int) -> str:
    return f"{path}: column '{column}', row {row} (counting from 0)"


def read_batches(path: Path, columns: Sequence[str], rows: int) -> Iterator[pa.RecordBatch]:
    """The file's rows in file order, at most ``rows`` a batch, reading little more than a batch at a time."""
    def batches() -> Iterator[pa.RecordBatch]:
        parquet = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
        yield from parquet.iter_batches(batch_size=rows, columns=list(columns))

    return readable(path, batches())


def readable(path: Path, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` of the file at ``path``, with a page that cannot be read (corrupt, cut
    short) refused as InputError when it is reached."""
    try:
        yield from batches
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None


def _check_type(path: Path, schema: Mapping[str, pl.DataType], column: str) -> None:
    dtype = schema[column]
    if column in ("request_id", "user", "model", "flow", "class", UPSTREAM):
        # A column no request filled may have no type of its own (a recording's upstream).
        ok = isinstance(dtype, _STRING_TYPES) or dtype in _STRING_TYPES or (column == UPSTREAM and dtype == pl.Null)
        rule = "must be strings"
    elif column == "priority":
        ok = dtype.is_integer() or dtype.is_float()
        rule = "must be integers (int64)"
    elif column in TOKEN_COLUMNS or column in (PREDICTED_CACHED, CACHED):
        # A recording's column no request filled may have no type of its own.
        ok = dtype.is_integer() or dtype.is_float() or (column in _SAID and dtype == pl.Null)
        rule = "must be whole numbers (int64)"
    elif column == PREFIX_BLOCKS:
        ok = isinstance(dtype, pl.List) and dtype.inner.is_integer()
        rule = "must be lists of integers (the prompt's block hashes, uint64)"
    elif column == ENGINE_START:
        ok = dtype.is_numeric() or dtype == pl.Null  # a column no engine filled may have no type of its own
        rule = "must be times (float64)"
    else:
        ok = dtype.is_numeric()
        rule = "must be numbers (float64)"
    if not ok:
        values = pl.read_parquet(path, columns=[column])[column]
        present = values.is_not_null().arg_true()
        row = int(present[0]) if len(present) else 0
        raise InputError(f"{_where(path, column, row)}: value {_shown(values[row])} has type {dtype}; {column} {rule}")


def _shown(value: Any) -> str:
    """A value for a one-line error: a list cell as a short list."""
    if isinstance(value, pl.Series):
        listed = value.to_list()
        return repr(listed) if len(listed) <= 6 else f"[{', '.join(map(repr, listed[:4]))}, ... ({len(listed):,} items)]"
    return "null" if value is None else repr(value)


def request_id_hashes(batch: pl.DataFrame) -> np.ndarray:
    """A 64-bit hash of each request id (equal ids, equal hashes, whatever the batch)."""
    return batch.select(pl.col("request_id").cast(pl.String).hash()).to_series().to_numpy()


class _Survey:
    """Goes through a trace batch by batch: the first row breaking each rule, the hashes of
    the request ids, the users, models and weights, and whether the rows are in arrival order."""

    def __init__(self, rules: list[Rule], rows: int, columns: Sequence[str]) -> None:
        self.rules = rules
        self.columns = columns
        self.found: dict[int, tuple[int, Any]] = {}  # rule index -> (first offending row, its value)
        self.hashes = np.empty(rows, dtype=np.uint64)
        self.rows = 0
        self.users: set[str] = set()
        self.models: set[str] = set()
        self.upstreams: set[str] = set()
        self.weights: dict[str, float] = {}
        self.in_order = True
        self._last_arrival = -np.inf
        self.said: set[str] = set()  # the columns of _SAID with a value in them

    def add(self, batch: pl.DataFrame) -> None:
        offset, n = self.rows, batch.height
        if "weight" in self.columns:
            batch = self._with_first_weights(batch)
        looked = [k for k, rule in enumerate(self.rules) if not rule.whole and k not in self.found]
        broken = batch.select([self.rules[k].mask.fill_null(False).any().alias(str(k)) for k in looked]).row(0) if looked else ()
        for k, hit in zip(looked, broken):
            if hit:
                column, mask = self.rules[k].column, self.rules[k].mask
                row = int(batch.select(mask.fill_null(False).arg_true().first()).item())
                self.found[k] = (offset + row, batch[column][row])
        self.hashes[offset:offset + n] = request_id_hashes(batch)
        self.users.update(batch["user"].cast(pl.String).drop_nulls().unique().to_list())
        if "model" in self.columns:
            self.models.update(batch["model"].cast(pl.String).drop_nulls().unique().to_list())
        if UPSTREAM in self.columns:
            self.upstreams.update(batch[UPSTREAM].cast(pl.String).drop_nulls().unique().to_list())
        for column in _SAID:
            if column in self.columns and column not in self.said and batch[column].drop_nulls().len():
                self.said.add(column)
        arrival = batch["arrival_s"].cast(pl.Float64).drop_nulls()  # a null is refused by a rule; it must not stop the survey
        if len(arrival):
            if arrival[0] < self._last_arrival or (arrival.diff() < 0).any():
                self.in_order = False
            self._last_arrival = arrival[-1]
        self.rows += n

    def _with_first_weights(self, batch: pl.DataFrame) -> pl.DataFrame:
        user = pl.col("user").cast(pl.String)
        firsts = batch.group_by(user, maintain_order=True).agg(pl.col("weight").cast(pl.Float64).first())
        for name, weight in firsts.iter_rows():
            if name is not None:
                self.weights.setdefault(name, weight)
        return batch.with_columns(user.replace_strict(list(self.weights), list(self.weights.values()), default=None,
                                                      return_dtype=pl.Float64).alias(FIRST_WEIGHT))

    def first_duplicate(self, path: Path, mask: pl.Expr) -> tuple[int, Any] | None:
        """The first row whose request id appeared earlier. Equal hashes only say there may be
        one: the ids themselves decide, so a hash collision never rejects a good file."""
        hashes = self.hashes[:self.rows]
        hashes.sort()
        if not (hashes[1:] == hashes[:-1]).any():
            return None
        ids = pl.read_parquet(path, columns=["request_id"])
        row = ids.select(mask.fill_null(False).arg_true().first()).item()
        return None if row is None else (int(row), ids["request_id"][int(row)])


def validate(path: Path, batch_rows: int = 1 << 17) -> TraceSummary:
    """Raise InputError for the first rule of semantics §1 that the file breaks, naming its
    first offending row; otherwise what the file holds. Reads the file once, a batch at a time."""
    rows = read_parquet_header(path).num_rows
    try:
        schema = pl.read_parquet_schema(path)
    except (pa.ArrowInvalid, OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    batches = (frame_of(batch) for batch in read_batches(path, _present(schema), batch_rows) if batch.num_rows)
    return _surveyed(path, schema, rows, batches, read_metadata(path))


def _present(schema: Mapping[str, pl.DataType]) -> tuple[str, ...]:
    return tuple(c for c in KNOWN_COLUMNS if c in schema)


def _surveyed(path: Path, schema: Mapping[str, pl.DataType], rows: int, batches: Iterable[pl.DataFrame],
              metadata: dict[str, Any]) -> TraceSummary:
    """Check a trace given as consecutive batches of its rows (of the columns it has of ours)."""
    if rows == 0:
        raise InputError(f"{path}: the trace has no rows")
    for column in REQUIRED:
        if column not in schema:
            raise InputError(f"{path}: missing required column '{column}' (a trace needs {', '.join(REQUIRED)})")
    if "cost" not in schema and "input_tokens" not in schema:
        raise InputError(f"{path}: missing column 'input_tokens' (required unless the trace has a 'cost' column)")
    columns = _present(schema)
    for column in columns:
        _check_type(path, schema, column)
    rules = rules_for(schema, checked_block_tokens(path, schema, metadata))
    survey = _Survey(rules, rows, columns)
    for batch in batches:
        survey.add(batch)
    for k, (column, mask, rule, whole) in enumerate(rules):
        found = survey.first_duplicate(path, mask) if whole else survey.found.get(k)
        if found is not None:
            row, value = found
            raise InputError(f"{_where(path, column, row)}: value {_shown(value)}; {rule}")
    # No engine said when a request started (or what it found cached, or the proxy's index what it predicted), no request
    # says where it went: read as a trace without the column.
    columns = tuple(c for c in columns if (c not in _SAID or c in survey.said) and (c != UPSTREAM or survey.upstreams))
    return TraceSummary(rows, columns, sorted(survey.users), sorted(survey.models), sorted(survey.upstreams), survey.weights, survey.in_order)


_TYPES: dict[str, pl.DataType | type[pl.DataType]] = {
    "request_id": pl.String, "user": pl.String, "model": pl.String,
    "arrival_s": pl.Float64, "cost": pl.Float64, "service_s": pl.Float64, "weight": pl.Float64,
    "input_tokens": pl.Int64, "max_tokens": pl.Int64, "output_tokens": pl.Int64, PREFIX_BLOCKS: pl.List(pl.UInt64),
    "priority": pl.Int64, "flow": pl.String, "class": pl.String, "deadline_s": pl.Float64, ENGINE_START: pl.Float64,
    UPSTREAM: pl.String, PREDICTED_CACHED: pl.Int64, CACHED: pl.Int64,
}


def with_schema_types(df: pl.DataFrame) -> pl.DataFrame:
    """The known columns of a validated frame, in their schema types."""
    return df.select([pl.col(c).cast(_TYPES[c]) for c in KNOWN_COLUMNS if c in df.columns])


def normalise(df: pl.DataFrame) -> pl.DataFrame:
    """Known columns in their schema types, rows in replay order (arrival_s, then row order)."""
    return with_schema_types(df).with_row_index("__row").sort(["arrival_s", "__row"]).drop("__row")


class ArrowStrings(Sequence[str]):
    """A string column as the core's sequence, without a Python object per row."""

    def __init__(self, column: pa.Array) -> None:
        self.column = column

    def __len__(self) -> int:
        return len(self.column)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]  # by index only: the core never slices request ids
        return self.column[i].as_py()

    def __iter__(self) -> Iterator[str]:
        """Every id at once (a router reads a chunk's ids in one pass): far cheaper than one by one."""
        return iter(self.column.to_pylist())


def _codes(column: pa.Array, names: list[str] | None = None) -> tuple[array, list[str]]:
    """Int codes into ``names`` (by default the column's distinct values in code-point order), -1 for null."""
    if names is None:
        names = sorted(pc.unique(column).drop_null().to_pylist())
    codes = pc.fill_null(pc.index_in(column, value_set=pa.array(names, pa.string())), -1)
    return _typed("i", codes.to_numpy(zero_copy_only=False).astype(np.int32)), names


def _typed(typecode: str, values: np.ndarray) -> array:
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values).tobytes())
    return out


def to_core(table: pa.Table | pl.DataFrame, users: list[str] | None = None, models: list[str] | None = None,
            weights: dict[str, float] | None = None, block_tokens: int | None = None, upstreams: list[str] | None = None) -> Trace:
    """The core's compact Trace from a validated table in schema types and replay order.

    ``users``, ``models``, ``upstreams`` and ``weights`` are those of the whole trace when the table is a
    chunk of it (so that codes mean the same in every chunk); by default, the table's own.
    ``block_tokens``: the trace's (semantics §14), needed when the table has prefix_blocks.
    """
    if isinstance(table, pl.DataFrame):
        table = table.to_arrow()

    def floats(name: str) -> array | None:
        if name not in table.column_names:
            return None
        return _typed("d", table[name].combine_chunks().to_numpy(zero_copy_only=False).astype(np.float64))

    def ints(name: str) -> array | None:
        if name not in table.column_names:
            return None
        return _typed("q", pc.fill_null(table[name].combine_chunks(), NULL).to_numpy(zero_copy_only=False).astype(np.int64))

    user, users = _codes(table["user"].combine_chunks(), users)
    model, models = _codes(table["model"].combine_chunks(), models) if "model" in table.column_names else (None, [])
    upstream, upstreams = _codes(table[UPSTREAM].combine_chunks(), upstreams) if UPSTREAM in table.column_names else (None, [])
    if weights is None:
        weights = {}
        if "weight" in table.column_names:
            per_user = frame_of(table.select(["user", "weight"])).group_by("user").agg(pl.col("weight").first())
            weights = dict(zip(per_user["user"].to_list(), per_user["weight"].to_list()))
    arrival_s = floats("arrival_s")
    assert arrival_s is not None, "a validated trace has arrival_s"
    priority = None
    if "priority" in table.column_names:
        priority = _typed("q", pc.fill_null(table["priority"].combine_chunks(), 0).to_numpy(zero_copy_only=False).astype(np.int64))
    strings = {name: ArrowStrings(table[name].combine_chunks()) for name in ("flow", "class") if name in table.column_names}
    return Trace(
        request_id=ArrowStrings(table["request_id"].combine_chunks()),
        user=user,
        users=users,
        arrival_s=arrival_s,
        input_tokens=ints("input_tokens"),
        max_tokens=ints("max_tokens"),
        output_tokens=ints("output_tokens"),
        cost=floats("cost"),
        service_s=floats("service_s"),
        model=model,
        models=models,
        weights=weights,
        prefix_blocks=prefix_blocks_of(table, block_tokens),
        priority=priority,
        flow=strings.get("flow"),
        policy_class=strings.get("class"),
        deadline_s=floats("deadline_s"),
        engine_start_s=floats(ENGINE_START),  # nulls read as NaN
        upstream=upstream,
        upstreams=upstreams,
    )


# What the log writer takes from the trace, besides the core's columns (a recording's figures: only a replay of it as it ran writes them).
LOG_WRITER_COLUMNS = ("request_id", "user", "weight", PREDICTED_CACHED, CACHED)


def load_trace(path: Path | str) -> LoadedTrace:
    """Validate a trace file and hold it whole, in replay order (extra columns are not read)."""
    path = Path(path)
    df = read_parquet(path, trace_columns=True)
    metadata = read_metadata(path)
    summary = _surveyed(path, df.schema, df.height, [df.select(_present(df.schema))], metadata)
    table = normalise(df).to_arrow()
    del df
    trace = to_core(table, summary.users, summary.models, summary.weights, block_tokens(metadata), summary.upstreams)
    kept = [c for c in LOG_WRITER_COLUMNS if c in summary.columns]
    return LoadedTrace(path=path, trace=trace, table=table.select(kept), metadata=metadata)
