"""Gateway request logs to a trace whose service times are the measured ones.

Each reader (``litellm``, ``otel``, ``envoy``) turns a file into ``LogRows``: one row per
model call with the columns of ``COLUMNS`` (its start as a naive UTC datetime), and a
count of what it read and left out. This module puts every file on one clock, refuses
a request id seen twice, and writes the trace with ``service_s`` (and ``ttft_s`` where
the log has it), so replays use the measured times instead of the token service model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from sfqtui.core.numbers import count, counted
from sfqtui.errors import InputError
from sfqtui.importers.convert import ImportSummary
from sfqtui.importers.options import ImportOptions
from sfqtui.trace.offered_load import suggested_slots_for
from sfqtui.trace.write import write_trace

COLUMNS: dict[str, pl.DataType] = {
    "request_id": pl.String(),
    "user": pl.String(),
    "start": pl.Datetime("ns"),
    "service_s": pl.Float64(),
    "ttft_s": pl.Float64(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "max_tokens": pl.Int64(),
    "model": pl.String(),
    "source": pl.String(),
    "where": pl.String(),  # "line 12", "record 3", "row 5": for the duplicate-id message
}
POLICY_TYPES: dict[str, pl.DataType] = {"priority": pl.Int64(), "flow": pl.String(), "class": pl.String()}  # semantics §15, where a log has them
RESOLUTION_S = 0.001  # the coarsest clock a log has (Envoy's whole milliseconds): a 0 s call took less than this


class Skip(NamedTuple):
    """A kind of record an import leaves out: ``counted(n, noun, nouns)`` and why."""

    noun: str
    why: str
    nouns: str | None = None


@dataclass
class LogRows:
    """What a reader made of one file."""

    frame: pl.DataFrame  # COLUMNS
    read: int  # records (lines, array items, spans) read
    skipped: Counter[Skip] = field(default_factory=Counter)


@dataclass(frozen=True)
class LogOptions:
    """What the gateway readers are told: where the user is, and whether failed calls stay."""

    user_from: str | None = None
    keep_failed: bool = False
    policy_from: tuple[tuple[str, str], ...] = ()  # (trace column, the field or header holding it), from --policy-from


@dataclass(frozen=True)
class LogSummary(ImportSummary):
    """An import's figures, and what it read and left out of the logs."""

    read: int = 0
    skipped: tuple[tuple[Skip, int], ...] = ()
    rounded_up: int = 0  # calls logged as taking 0 s, kept as RESOLUTION_S
    with_ttft: int = 0

    def lines(self) -> list[str]:
        """What the import read and left out, and what the trace's times are."""
        left = ", ".join(f"{counted(n, skip.noun, skip.nouns)} ({skip.why})" for skip, n in self.skipped)
        read = f"read {counted(self.read, 'record')}, kept {count(self.rows)}" + (f"; skipped {left}" if left else "")
        times = f"service_s: measured on all {counted(self.rows, 'request')}"
        if self.rounded_up:
            times += f" ({count(self.rounded_up)} logged as 0 ms, kept as 1 ms)"
        times += f"; ttft_s: on {count(self.with_ttft)} of them" if self.with_ttft else "; the log has no time to first token"
        return [read, times]


def log_options(options: ImportOptions) -> LogOptions:
    """The gateway readers' options; refuse those that only the trace importers read."""
    given = [name for name, unused in (
        ("--users", options.users.count is not None), ("--max-tokens", options.max_tokens.kind != "none"),
        ("--jitter", options.jitter_s != 0), ("--map", bool(options.mapping)), ("--time-unit", options.time_unit != "s"),
    ) if unused]
    if given:
        raise InputError(f"{', '.join(given)}: not read from a gateway log (its users come from --user-from, its times are logged)")
    return LogOptions(user_from=options.users.column, keep_failed=options.keep_failed, policy_from=tuple(options.policy_from.items()))


def write_log_trace(fmt: str, parts: list[LogRows], sources: list[Path], out: Path, settings: LogOptions) -> LogSummary:
    """Put every file's calls on one clock (0 = the first call) and write the trace."""
    frame = pl.concat([part.frame.select([*(pl.col(c).cast(t) for c, t in COLUMNS.items()),
                                          *(pl.col(c).cast(t) if c in part.frame.columns else pl.lit(None, t).alias(c)
                                            for c, t in POLICY_TYPES.items())])
                       for part in parts])
    skipped: Counter[Skip] = Counter()
    for part in parts:
        skipped.update(part.skipped)
    read = sum(part.read for part in parts)
    if frame.is_empty():
        reasons = ", ".join(f"{counted(n, skip.noun, skip.nouns)} skipped ({skip.why})" for skip, n in skipped.items())
        files = ", ".join(str(p) for p in sources)
        raise InputError(f"no model calls to import in {files} ({counted(read, 'record')} read{': ' + reasons if reasons else ''})")
    _refuse_duplicates(frame)
    rounded_up = int((frame["service_s"] == 0).sum())
    # in arrival order (ties in log order), which replays read fastest
    frame = frame.with_columns(pl.col("service_s").clip(lower_bound=RESOLUTION_S)).sort("start", maintain_order=True)
    t0, t_end = frame["start"].min(), frame["start"].max()
    assert isinstance(t0, datetime) and isinstance(t_end, datetime)  # the frame has rows
    span = (t_end - t0).total_seconds()
    service = float(frame["service_s"].sum())
    optional = [c for c in ("max_tokens", "ttft_s", *POLICY_TYPES) if frame[c].is_not_null().any()]
    trace = frame.select(
        "request_id", "user",
        pl.Series("arrival_s", _since_first(frame)),
        "input_tokens", "output_tokens", "service_s", "model", *optional, "source",
    )
    slots = suggested_slots_for(service, span)
    metadata: dict[str, object] = {"format": fmt, "sources": [str(p) for p in sources], "options": asdict(settings),
                                   "service": "measured", "start_utc": t0.isoformat()}
    if slots is not None:  # what replays use when --slots is not given
        metadata.update(slots=slots, offered_load=service / span)
    write_trace(trace, out, metadata)
    return LogSummary(
        rows=trace.height, users=trace["user"].n_unique(), files=len(sources), span_s=span, slots=slots,
        offered_load=service / span if span > 0 else None, service="the measured service times",
        read=read, skipped=tuple(skipped.most_common()), rounded_up=rounded_up, with_ttft=int(frame["ttft_s"].is_not_null().sum()),
    )


def _since_first(frame: pl.DataFrame) -> np.ndarray:
    """Seconds from the first start, each the double nearest to its nanoseconds (numpy divides
    exactly; polars may multiply by 1e-9 instead: 62.75 s would read 62.75000000000001)."""
    start = pl.col("start")
    return frame.select((start - start.min()).dt.total_nanoseconds()).to_series().to_numpy().astype(np.float64) / 1e9


def _refuse_duplicates(frame: pl.DataFrame) -> None:
    repeated = frame.filter(pl.col("request_id").is_duplicated())
    if repeated.height:
        first = repeated["request_id"][0]
        places = repeated.filter(pl.col("request_id") == first)
        shown = " and ".join(f"{row['source']} {row['where']}" for row in places.head(2).iter_rows(named=True))
        raise InputError(f"request id {first!r} appears twice ({shown}): the same log given twice?")


def first_bad(frame: pl.DataFrame, path: Path, mask: pl.Expr, field: str, rule: str, shown: str | None = None) -> None:
    """Refuse the first row where ``mask`` holds, naming where it is, the field, its value (when it has one) and the rule."""
    hit = frame.filter(mask.fill_null(False)).head(1)
    if hit.height:
        value = hit[shown or field][0]
        raise InputError(f"{path}: {hit['where'][0]}: {field} {'' if value is None else repr(value) + ' '}{rule}")


def whole_numbers(column: str) -> tuple[pl.Expr, pl.Expr]:
    """A text column of token counts as Int64, and the mask of values that are not whole numbers >= 0."""
    number = pl.col(column).cast(pl.Float64, strict=False)
    bad = pl.col(column).is_not_null() & (number.is_null() | number.is_nan() | number.is_infinite() | (number < 0) | (number != number.floor()))
    return number.cast(pl.Int64, strict=False), bad


def missing(column: str) -> pl.Expr:
    """Null, or text that says nothing: empty, blank or Envoy's "-" placeholder."""
    text = pl.col(column).cast(pl.String).str.strip_chars()
    return text.is_null() | text.is_in(["", "-"])


def seconds_between(start: pl.Expr, end: pl.Expr) -> pl.Expr:
    return (end - start).dt.total_nanoseconds().cast(pl.Float64) / 1e9


def policy_columns(frame: pl.DataFrame, path: Path, fields: dict[str, pl.Expr]) -> list[pl.Expr]:
    """The trace's policy columns (semantics §15) from the text values ``fields`` gives each; a
    priority that is not an integer is refused, naming where it is."""
    columns = []
    for column, value in fields.items():
        if column == "priority":
            number = value.cast(pl.Float64, strict=False)
            bad = value.is_not_null() & (number.is_null() | number.is_nan() | number.is_infinite() | (number != number.floor()))
            first_bad(frame.with_columns(value.alias("priority")), path, bad, "priority", "is not an integer", shown="priority")
            columns.append(number.cast(pl.Int64, strict=False).alias(column))
        else:
            columns.append(value.alias(column))
    return columns
