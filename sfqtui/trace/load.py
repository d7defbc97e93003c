"""Load a trace file and refuse a bad one with one line: column, first offending row, rule."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.engine.trace import NULL, Trace
from sfqtui.errors import InputError
from sfqtui.trace.schema import REQUIRED, TOKEN_COLUMNS, TRACE_COLUMNS
from sfqtui.trace.write import read_metadata

_STRING_TYPES = (pl.String, pl.Categorical, pl.Enum)


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
        """The slot count the trace was made for (scenarios and importers record one)."""
        slots = self.metadata.get("slots")
        return int(slots) if isinstance(slots, int) and slots > 0 else None


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
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None


def read_parquet(path: Path, what: str = "trace") -> pl.DataFrame:
    """Read a Parquet file or raise InputError naming what is wrong with it."""
    read_parquet_header(path, what)
    try:
        return pl.read_parquet(path)
    except (pa.ArrowInvalid, OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None


def _where(path: Path, column: str, row: int) -> str:
    return f"{path}: column '{column}', row {row} (counting from 0)"


def _check_type(path: Path, df: pl.DataFrame, column: str) -> None:
    dtype = df.schema[column]
    if column in ("request_id", "user", "model"):
        ok = isinstance(dtype, _STRING_TYPES) or dtype in _STRING_TYPES
        rule = "must be strings"
    elif column in TOKEN_COLUMNS:
        ok = dtype.is_integer() or dtype.is_float()
        rule = "must be whole numbers (int64)"
    else:
        ok = dtype.is_numeric()
        rule = "must be numbers (float64)"
    if not ok:
        present = df[column].is_not_null().arg_true()
        row = int(present[0]) if len(present) else 0
        value = df[column][row]
        raise InputError(f"{_where(path, column, row)}: value {value!r} has type {dtype}; {column} {rule}")


class Rule(NamedTuple):
    """A rule of semantics §1: the rows that break it, and optionally a cheaper test of whether any does."""

    column: str
    mask: pl.Expr
    text: str
    broken: pl.Expr | None = None

    def any_broken(self) -> pl.Expr:
        return self.broken if self.broken is not None else self.mask.fill_null(False).any()


def _rules(df: pl.DataFrame) -> list[Rule]:
    """The rules that apply to this frame, in the order they are reported."""
    has_cost = "cost" in df.columns
    rules: list[Rule] = []
    for column in ("request_id", "user"):
        rules.append(Rule(column, pl.col(column).is_null(), f"{column} is required on every row"))
    ids = pl.col("request_id")
    rules.append(Rule("request_id", ids.is_duplicated() & ~ids.is_first_distinct(),
                      "request_id must be unique (this id appeared earlier)", broken=ids.n_unique() < pl.len()))
    arrival = pl.col("arrival_s").cast(pl.Float64)
    rules += [
        Rule("arrival_s", arrival.is_null(), "arrival_s is required on every row"),
        Rule("arrival_s", arrival.is_nan() | arrival.is_infinite(), "arrival_s must be finite"),
        Rule("arrival_s", arrival < 0, "arrival_s must be >= 0"),
    ]
    for column in TOKEN_COLUMNS:
        if column not in df.columns:
            continue
        values = pl.col(column)
        if df.schema[column].is_float():
            rules.append(Rule(column, values.is_nan() | values.is_infinite(), f"{column} must be a finite whole number"))
            rules.append(Rule(column, values != values.floor(), f"{column} must be a whole number of tokens"))
        if column == "input_tokens" and not has_cost:
            rules.append(Rule(column, values.is_null(), "input_tokens is required on every row when there is no cost column"))
        if column == "max_tokens":
            rules.append(Rule(column, values <= 0, "max_tokens must be > 0"))
        else:
            rules.append(Rule(column, values < 0, f"{column} must be >= 0"))
    for column, rule in (("cost", "cost must be > 0"), ("service_s", "service_s must be > 0"), ("weight", "weight must be > 0")):
        if column not in df.columns:
            continue
        values = pl.col(column).cast(pl.Float64)
        rules += [
            Rule(column, values.is_null(), f"{column} must be given on every row when the column is present"),
            Rule(column, values.is_nan() | values.is_infinite(), f"{column} must be finite"),
            Rule(column, values <= 0, rule),
        ]
    if "weight" in df.columns:
        weight = pl.col("weight").cast(pl.Float64)
        rules.append(Rule("weight", weight != weight.first().over("user"), "a user's weight must be the same on all of its rows"))
    return rules


def validate(path: Path, df: pl.DataFrame) -> None:
    """Raise InputError for the first rule of semantics §1 that the frame breaks.

    Every rule is evaluated in one parallel pass; the first offending row is looked up
    only for a rule that fails.
    """
    if df.height == 0:
        raise InputError(f"{path}: the trace has no rows")
    for column in REQUIRED:
        if column not in df.columns:
            raise InputError(f"{path}: missing required column '{column}' (a trace needs {', '.join(REQUIRED)})")
    if "cost" not in df.columns and "input_tokens" not in df.columns:
        raise InputError(f"{path}: missing column 'input_tokens' (required unless the trace has a 'cost' column)")
    for column in TRACE_COLUMNS:
        if column in df.columns:
            _check_type(path, df, column)
    rules = _rules(df)
    broken = df.select([rule.any_broken().alias(str(k)) for k, rule in enumerate(rules)]).row(0)
    for (column, mask, rule, _), hit in zip(rules, broken):
        if hit:
            row = int(df.select(mask.fill_null(False).arg_true().first()).item())
            value = df[column][row]
            shown = "null" if value is None else repr(value)
            raise InputError(f"{_where(path, column, row)}: value {shown}; {rule}")


def normalise(df: pl.DataFrame) -> pl.DataFrame:
    """Known columns in their schema types, rows in replay order (arrival_s, then row order)."""
    casts = {
        "request_id": pl.String, "user": pl.String, "model": pl.String,
        "arrival_s": pl.Float64, "cost": pl.Float64, "service_s": pl.Float64, "weight": pl.Float64,
        "input_tokens": pl.Int64, "max_tokens": pl.Int64, "output_tokens": pl.Int64,
    }
    present = [c for c in TRACE_COLUMNS if c in df.columns]
    return (
        df.select([pl.col(c).cast(casts[c]) for c in present])
        .with_row_index("__row")
        .sort(["arrival_s", "__row"])
        .drop("__row")
    )


class ArrowStrings(Sequence[str]):
    """A string column as the core's sequence, without a Python object per row."""

    def __init__(self, column: pa.Array) -> None:
        self.column = column

    def __len__(self) -> int:
        return len(self.column)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self.column[i].as_py()


def _codes(column: pa.Array) -> tuple[array, list[str]]:
    """Int codes into the sorted distinct values (code-point order), -1 for null."""
    names = sorted(pc.unique(column).drop_null().to_pylist())
    codes = pc.fill_null(pc.index_in(column, value_set=pa.array(names, pa.string())), -1)
    return _typed("i", codes.to_numpy(zero_copy_only=False).astype(np.int32)), names


def _typed(typecode: str, values: np.ndarray) -> array:
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values).tobytes())
    return out


def to_core(table: pa.Table | pl.DataFrame) -> Trace:
    """The core's compact Trace from a validated, normalised table."""
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

    user, users = _codes(table["user"].combine_chunks())
    model, models = _codes(table["model"].combine_chunks()) if "model" in table.column_names else (None, [])
    weights: dict[str, float] = {}
    if "weight" in table.column_names:
        per_user = pl.from_arrow(table.select(["user", "weight"])).group_by("user").agg(pl.col("weight").first())  # type: ignore[union-attr]
        weights = dict(zip(per_user["user"].to_list(), per_user["weight"].to_list()))
    return Trace(
        request_id=ArrowStrings(table["request_id"].combine_chunks()),
        user=user,
        users=users,
        arrival_s=floats("arrival_s"),  # type: ignore[arg-type]
        input_tokens=ints("input_tokens"),
        max_tokens=ints("max_tokens"),
        output_tokens=ints("output_tokens"),
        cost=floats("cost"),
        service_s=floats("service_s"),
        model=model,
        models=models,
        weights=weights,
    )


def load_trace(path: Path | str) -> LoadedTrace:
    path = Path(path)
    df = read_parquet(path)
    validate(path, df)
    table = normalise(df).to_arrow()
    del df
    trace = to_core(table)
    kept = [c for c in ("request_id", "user", "weight") if c in table.column_names]
    return LoadedTrace(path=path, trace=trace, table=table.select(kept), metadata=read_metadata(path))
