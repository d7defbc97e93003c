"""Each format's files as lazy frames with the same standard columns.

Standard columns: ``source`` (file name), ``line`` (1-based line in the file, for errors
and request ids), ``t`` (seconds as Float64, or a naive UTC Datetime), ``input_tokens``,
``output_tokens``, optional ``model``, ``user``, ``max_tokens``, ``cost``, ``service_s``,
``weight``, ``request_id``; every source column is kept too, so ``--user-from`` can name
any of them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from sfqtui.errors import InputError
from sfqtui.importers.options import ImportOptions
from sfqtui.importers.records import first_bad_json_line

RAW_TIME = "__arrival"  # the mapped arrival column as read, for errors (the column may itself be named t)
JSON_LINES = ("mooncake", "jsonl")
MOONCAKE_BLOCK_TOKENS = 512  # the tokens of one of a Mooncake trace's hash_ids

_NAIVE = ("%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S")
_AWARE = ("%Y-%m-%d %H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%:z", "%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M:%S%:z")


def parse_datetime(column: str) -> pl.Expr:
    """Datetime strings with up to 9 fractional digits, with or without a UTC offset (``Z`` too), as naive UTC."""
    text = pl.col(column).cast(pl.String).str.strip_chars().str.replace(r"[Zz]$", "+00:00")
    naive = [text.str.to_datetime(f, time_unit="ns", strict=False) for f in _NAIVE]
    aware = [
        text.str.to_datetime(f, time_unit="ns", strict=False).dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        for f in _AWARE
    ]
    return pl.coalesce(*naive, *aware)


def _scan_csv(path: Path) -> pl.LazyFrame:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    return pl.scan_csv(path, infer_schema_length=10_000, null_values=[""]).with_row_index("line", offset=2)


def unreadable_file(path: Path, fmt: str, exc: pl.exceptions.PolarsError) -> InputError:
    """What to say when polars cannot read a file: for JSON lines, the first line that is not JSON."""
    if fmt in JSON_LINES:
        with path.open("rb") as lines:
            bad = first_bad_json_line(lines, path)
        if bad is not None:
            return bad
    return InputError(f"{path}: cannot be read as {fmt} ({str(exc).splitlines()[0]})")


def _require(path: Path, frame: pl.LazyFrame, columns: tuple[str, ...], fmt: str) -> list[str]:
    try:
        names = frame.collect_schema().names()
    except pl.exceptions.PolarsError as exc:
        raise unreadable_file(path, fmt, exc) from None
    missing = [c for c in columns if c not in names]
    if missing:
        shown = ", ".join(repr(n) for n in names if n != "line")
        raise InputError(f"{path}: missing column(s) {', '.join(map(repr, missing))} for the {fmt} format (found: {shown})")
    return names


def azure(path: Path, options: ImportOptions) -> pl.LazyFrame:
    """Azure LLM inference traces (2023, 2024): TIMESTAMP, ContextTokens, GeneratedTokens."""
    frame = _scan_csv(path)
    _require(path, frame, ("TIMESTAMP", "ContextTokens", "GeneratedTokens"), "azure")
    service = path.stem
    return frame.with_columns(
        source=pl.lit(path.name),
        t=parse_datetime("TIMESTAMP"),
        input_tokens=pl.col("ContextTokens"),
        output_tokens=pl.col("GeneratedTokens"),
        model=pl.lit(service),
        user=pl.lit(service),
    )


def burstgpt(path: Path, options: ImportOptions) -> pl.LazyFrame:
    """BurstGPT: columns by name; Session ID and Elapsed time only in later files."""
    frame = _scan_csv(path)
    names = _require(path, frame, ("Timestamp", "Model", "Request tokens", "Response tokens", "Log Type"), "burstgpt")
    frame = frame.with_columns(
        source=pl.lit(path.name),
        t=pl.col("Timestamp").cast(pl.Float64, strict=False),
        input_tokens=pl.col("Request tokens"),
        output_tokens=pl.col("Response tokens"),
        model=pl.col("Model").cast(pl.String),
    )
    if "Session ID" in names:
        # API-log rows have no session: they are grouped under their log type.
        frame = frame.with_columns(pl.col("Session ID").cast(pl.String).fill_null(pl.col("Log Type").cast(pl.String)))
    if not options.keep_failed:
        frame = frame.filter(pl.col("Response tokens").cast(pl.Int64, strict=False) != 0)
    return frame


def mooncake(path: Path, options: ImportOptions) -> pl.LazyFrame:
    """Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids.

    ``hash_ids`` name the prompt's blocks of 512 tokens, the last one partial; they are kept
    as ``prefix_blocks``, the full blocks only (an engine caches no partial block)."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    frame = pl.scan_ndjson(path, infer_schema_length=10_000).with_row_index("line", offset=1)
    names = _require(path, frame, ("timestamp", "input_length", "output_length"), "mooncake")
    t = pl.col("timestamp").cast(pl.Float64, strict=False) / 1000.0
    if options.jitter_s > 0:
        spread = pl.col("line").map_batches(lambda lines: pl.Series(unit_interval(lines.to_numpy(), options.seed)), return_dtype=pl.Float64)
        t = t + spread * options.jitter_s
    blocks = {}
    if "hash_ids" in names:
        full = pl.col("input_length").cast(pl.Int64, strict=False).fill_null(0) // MOONCAKE_BLOCK_TOKENS
        blocks["prefix_blocks"] = pl.col("hash_ids").list.head(full).cast(pl.List(pl.UInt64))
    return frame.with_columns(
        source=pl.lit(path.name),
        t=t,
        input_tokens=pl.col("input_length"),
        output_tokens=pl.col("output_length"),
        **blocks,
    )


def generic(path: Path, options: ImportOptions, jsonl: bool) -> pl.LazyFrame:
    """Any CSV or JSONL with --map NAME=COLUMN and --time-unit."""
    mapping = options.mapping
    if "arrival_s" not in mapping:
        raise InputError("--map must name the arrival column (arrival_s=COLUMN)")
    if "input_tokens" not in mapping and "cost" not in mapping:
        raise InputError("--map must name input_tokens=COLUMN (or cost=COLUMN)")
    if jsonl:
        if not path.exists():
            raise InputError(f"{path}: no such file")
        frame = pl.scan_ndjson(path, infer_schema_length=10_000).with_row_index("line", offset=1)
    else:
        frame = _scan_csv(path)
    _require(path, frame, tuple(mapping.values()), "jsonl" if jsonl else "csv")
    source = pl.col(mapping["arrival_s"])
    if options.time_unit == "datetime":
        t = parse_datetime(mapping["arrival_s"])
    else:
        scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[options.time_unit]
        t = source.cast(pl.Float64, strict=False) * scale
    renamed = [pl.col(column).alias(target) for target, column in mapping.items() if target != "arrival_s"]
    return frame.with_columns(*renamed, source.alias(RAW_TIME), source=pl.lit(path.name), t=t)


def unit_interval(rows: np.ndarray, seed: int) -> np.ndarray:
    """A deterministic value in [0, 1) per row number: splitmix64 of (seed, row)."""
    with np.errstate(over="ignore"):
        z = rows.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


READERS = {
    "azure": azure,
    "burstgpt": burstgpt,
    "mooncake": mooncake,
    "csv": lambda path, options: generic(path, options, jsonl=False),
    "jsonl": lambda path, options: generic(path, options, jsonl=True),
}
