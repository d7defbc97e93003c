"""Import real traces: read each file lazily, check it, put every file on one clock, write Parquet.

Nothing is collected in memory but a few aggregates: the checks and the common clock
are streaming aggregations, and the output is written with ``sink_parquet``, so tens of
millions of rows go through in bounded memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl

from sfqtui.core.pricing.service import TokenServiceModel
from sfqtui.errors import InputError
from sfqtui.importers.options import ImportOptions, Users
from sfqtui.importers.readers import MOONCAKE_BLOCK_TOKENS, RAW_TIME, READERS, unit_interval, unreadable_file
from sfqtui.paths import atomic_output
from sfqtui.trace.offered_load import service_seconds, suggested_slots_for
from sfqtui.trace.schema import BLOCK_TOKENS_KEY, METADATA_KEY, PREFIX_BLOCKS

FORMATS = tuple(READERS)
TIME_COLUMN = {"azure": "TIMESTAMP", "burstgpt": "Timestamp", "mooncake": "timestamp"}
ZIPF_S = 1.1
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImportSummary:
    rows: int
    users: int
    files: int
    span_s: float
    slots: int | None  # the slot count the trace suggests (None: its arrivals span no time)
    offered_load: float | None  # slots kept busy on average by the service times below
    service: str = "the default service model"  # where the service times come from
    between_files_s: float = 0.0  # how much of the span no file's arrivals cover: files far apart in time


def _time_column(fmt: str, options: ImportOptions) -> str:
    return TIME_COLUMN.get(fmt) or options.mapping["arrival_s"]


def _check(fmt: str, path: Path, frame: pl.LazyFrame, options: ImportOptions, shared: Collection[str]) -> tuple[object, object, float]:
    """Refuse the first unparseable time or token count; return the file's first and last
    time and its total service time (the default service model on the ``shared`` columns,
    those the trace will have)."""
    token_columns = [c for c in ("input_tokens", "output_tokens", "max_tokens") if c in frame.collect_schema().names()]
    checks = [pl.col("line").filter(pl.col("t").is_null()).first().alias("bad_t"),
              service_seconds(TokenServiceModel(), shared).sum().alias("service")]
    for column in token_columns:
        counts = pl.col(column)
        value = counts.cast(pl.Int64, strict=False)
        unreadable = counts.is_not_null() & value.is_null()
        missing = counts.is_null() if column != "max_tokens" else pl.lit(False)
        checks.append(pl.col("line").filter(unreadable | missing | (value < 0)).first().alias(f"bad_{column}"))
    try:
        found = (frame.select(*checks, pl.col("t").min().alias("first"), pl.col("t").max().alias("last"), pl.len().alias("rows"))
                 .collect(engine="streaming").row(0, named=True))
    except pl.exceptions.PolarsError as exc:
        raise unreadable_file(path, fmt, exc) from None
    raw_time = _time_column(fmt, options)
    token_rules = [(f"bad_{c}", options.mapping.get(c, c), "is not a whole number >= 0") for c in token_columns]
    for name, raw, rule in [("bad_t", raw_time, "is not a time"), *token_rules]:
        line = found.get(name)
        if line is not None:
            source = raw if name == "bad_t" else _source_of(fmt, raw)
            value_column = RAW_TIME if name == "bad_t" and RAW_TIME in frame.collect_schema().names() else source
            found_value = frame.filter(pl.col("line") == line).select(pl.col(value_column)).collect().item()
            raise InputError(f"{path}: line {line}: {source} {'is missing' if found_value is None else f'{found_value!r} {rule}'}")
    if not found["rows"]:
        raise InputError(f"{path}: no rows to import")
    return found["first"], found["last"], found["service"]


def _uncovered(firsts: list[object], lasts: list[object], t0: object) -> float:
    """Seconds of the span from the first arrival to the last that lie between files (no file's arrivals cover them)."""

    def since(x: object) -> float:
        gap = x - t0  # type: ignore[operator]  # times of one clock subtract
        return gap.total_seconds() if hasattr(gap, "total_seconds") else float(gap)

    uncovered, reached = 0.0, 0.0
    for start, end in sorted((since(first), since(last)) for first, last in zip(firsts, lasts)):
        uncovered += max(0.0, start - reached)
        reached = max(reached, end)
    return uncovered


def _source_of(fmt: str, column: str) -> str:
    names = {
        "azure": {"input_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"},
        "burstgpt": {"input_tokens": "Request tokens", "output_tokens": "Response tokens"},
        "mooncake": {"input_tokens": "input_length", "output_tokens": "output_length"},
    }
    return names.get(fmt, {}).get(column, column)


def _seconds_since(t0: object) -> pl.Expr:
    if isinstance(t0, (int, float)):
        return pl.col("t") - float(t0)
    return (pl.col("t") - pl.lit(t0)).dt.total_nanoseconds().cast(pl.Float64) / 1e9


def _assigned(users: Users) -> pl.Expr:
    """Synthetic users by global row: round robin, or a seeded uniform or Zipf draw (user-000, ...)."""
    assert users.count is not None
    n, seed = users.count, users.seed
    if users.assign == "round-robin":
        index = pl.col("__row").mod(n)
    else:
        weights = np.ones(n) if users.assign == "uniform" else 1.0 / np.arange(1, n + 1) ** ZIPF_S
        cdf = np.cumsum(weights) / weights.sum()

        def draw(rows: pl.Series) -> pl.Series:
            picks = np.searchsorted(cdf, unit_interval(rows.to_numpy(), seed + 1), side="right")
            return pl.Series(np.minimum(picks, n - 1), dtype=pl.Int64)

        index = pl.col("__row").map_batches(draw, return_dtype=pl.Int64)
    return pl.format("user-{}", index.cast(pl.String).str.zfill(len(str(n - 1))))


def _user(users: Users, columns: list[str]) -> pl.Expr:
    if users.count is not None:
        return _assigned(users)
    if users.column is not None:
        if users.column not in columns:
            shown = ", ".join(repr(c) for c in columns if not c.startswith("__") and c not in ("line", "t", "source"))
            raise InputError(f"--user-from {users.column!r}: no such column (columns: {shown})")
        return pl.col(users.column).cast(pl.String).fill_null("(none)")
    if "user" in columns:
        return pl.col("user").cast(pl.String).fill_null("(none)")
    if "Session ID" in columns:
        return pl.col("Session ID").cast(pl.String)
    return pl.lit("all")


def _max_tokens(options: ImportOptions) -> pl.Expr | None:
    policy = options.max_tokens
    out = pl.col("output_tokens").cast(pl.Int64)
    if policy.kind == "none":
        return None
    if policy.kind == "fixed":
        return pl.max_horizontal(pl.lit(policy.n), out)
    if policy.kind == "bucket":
        return pl.max_horizontal(pl.lit(policy.n), ((out + policy.n - 1) // policy.n) * policy.n)
    # the next power of two at or above the output, at least n
    power = (out.clip(lower_bound=1).cast(pl.Float64).log(2).ceil()).cast(pl.Int64)
    return pl.max_horizontal(pl.lit(policy.n), pl.lit(2, pl.Int64).pow(power))


def import_trace(fmt: str, sources: list[Path], out: Path, options: ImportOptions, progress: Progress | None = None) -> ImportSummary:
    if fmt not in READERS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not sources:
        raise InputError("give at least one source file")
    say = progress or (lambda _message: None)
    frames = []
    names = service_names(sources)
    for path in sources:
        frame = READERS[fmt](Path(path), options)
        if fmt == "azure":  # each file is a service: its model, and by default its user
            frame = frame.with_columns(model=pl.lit(names[path]), user=pl.lit(names[path]))
        frames.append(frame)
    columns = [c for c in frames[0].collect_schema().names()]
    shared: set[str] = set.intersection(*(set(f.collect_schema().names()) for f in frames))
    firsts, lasts, service = [], [], 0.0
    for path, frame in zip(sources, frames):
        say(f"checking {path.name}")
        first, last, file_service = _check(fmt, Path(path), frame, options, shared)
        firsts.append(first)
        lasts.append(last)
        service += file_service
    kinds = {type(x) for x in firsts}
    if len(kinds) > 1:
        raise InputError("the files do not share a clock: some give datetimes, others numbers")
    t0, t_end = min(firsts), max(lasts)  # type: ignore[type-var]  # all numbers or all datetimes: checked just above
    span = (t_end - t0).total_seconds() if hasattr(t_end - t0, "total_seconds") else float(t_end - t0)  # type: ignore[operator]  # times of one clock subtract
    slots = suggested_slots_for(service, span)

    order = sorted(shared, key=columns.index)
    combined = pl.concat([f.select(order) for f in frames], how="vertical_relaxed").with_row_index("__row")
    stem = pl.col("source").str.replace(r"\.[^.]*$", "")
    selected = [
        (pl.col("request_id").cast(pl.String) if "request_id" in shared else pl.format("{}:{}", stem, pl.col("line"))).alias("request_id"),
        _user(options.users, sorted(shared)).alias("user"),
        _seconds_since(t0).alias("arrival_s"),
    ]
    for column in ("input_tokens", "output_tokens"):
        if column in shared:
            selected.append(pl.col(column).cast(pl.Int64))
    max_tokens = _max_tokens(options) if "output_tokens" in shared else None
    if "max_tokens" in shared:
        selected.append(pl.col("max_tokens").cast(pl.Int64))
    elif max_tokens is not None:
        selected.append(max_tokens.alias("max_tokens"))
    for column, dtype in (("cost", pl.Float64), ("service_s", pl.Float64), ("weight", pl.Float64), ("model", pl.String),
                          # semantics §15's policy columns; a priority that is not a whole number is refused by the loader
                          ("priority", pl.Float64), ("flow", pl.String), ("class", pl.String), ("deadline_s", pl.Float64)):
        if column in shared:
            selected.append(pl.col(column).cast(dtype))
    selected.append(pl.col("source"))
    if PREFIX_BLOCKS in shared:
        selected.append(pl.col(PREFIX_BLOCKS).cast(pl.List(pl.UInt64)))
    lazy = combined.select(selected)

    metadata: dict[str, object] = {"format": fmt, "sources": [str(p) for p in sources], "options": _options_dict(options)}
    if PREFIX_BLOCKS in shared:
        metadata[BLOCK_TOKENS_KEY] = MOONCAKE_BLOCK_TOKENS
    if slots is not None:  # what replays use when --slots is not given
        metadata.update(slots=slots, offered_load=service / span)
    say(f"writing {out.name}")
    try:
        with atomic_output(out) as tmp:
            lazy.sink_parquet(tmp, compression="zstd", row_group_size=1 << 18, metadata={METADATA_KEY.decode(): json.dumps(metadata)})
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot import: {str(exc).splitlines()[0]}") from None
    stats = pl.scan_parquet(out).select(pl.len().alias("rows"), pl.col("user").n_unique().alias("users")).collect().row(0, named=True)
    return ImportSummary(stats["rows"], stats["users"], len(sources), span, slots, service / span if span > 0 else None,
                         between_files_s=_uncovered(firsts, lasts, t0))


def service_names(paths: list[Path]) -> dict[Path, str]:
    """File stems without the prefix they share: AzureLLMInferenceTrace_code, ..._conv -> code, conv."""
    stems = [Path(p).stem for p in paths]
    if len(stems) < 2:
        return {p: s for p, s in zip(paths, stems)}
    prefix = os.path.commonprefix(stems)  # noqa: RUF071 - character-wise on purpose; cut back to a whole word below
    cut = max(prefix.rfind(sep) for sep in "_-. ") + 1  # only whole words: ..._co|de is not a prefix
    short = [s[cut:] for s in stems]
    if all(short) and len(set(short)) == len(short):
        stems = short
    return {p: s for p, s in zip(paths, stems)}


def _options_dict(options: ImportOptions) -> dict[str, object]:
    return json.loads(json.dumps(asdict(options), default=str))


