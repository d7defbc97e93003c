"""A log file's records as a frame of text fields: JSON lines, a JSON array, or CSV.

Every field is read as text (a number, an object, an array included) so that each reader
decides what a value must be and can name the record that breaks it: ``where`` says
``line N`` (JSON lines, counting every line), ``record N`` (an array's items) or ``row N``
(CSV data rows; a quoted field may span lines). Empty text and JSON null are null.
"""

from __future__ import annotations

import io
import json
from collections.abc import Collection, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

import polars as pl

from sfqtui.errors import InputError


def read_records(path: Path, fields: Collection[str], fmt: str) -> pl.DataFrame:
    """The ``fields`` of every record in ``path`` (null where a record lacks one), and ``where``."""
    data = path.read_bytes()
    head = data.lstrip()[:1]
    try:
        if path.suffix.lower() == ".csv":
            frame = _csv(data, fields)
        elif head == b"[":
            frame = _items(json.loads(data), fields, path)
        elif head == b"{":
            wrapped = _wrapped(data, fields, path, fmt)
            frame = _lines(data, fields, path) if wrapped is None else wrapped
        elif not head:
            raise InputError(f"{path}: the file is empty")
        else:
            raise InputError(f"{path}: not {fmt} records (JSON lines, a JSON array or a .csv file)")
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"{path}: cannot be read as {fmt} ({str(exc).splitlines()[0]})") from None
    text = [pl.col(f).str.strip_chars() for f in fields]
    return frame.with_columns(pl.when(t != "").then(t).alias(f) for t, f in zip(text, fields))


def _csv(data: bytes, fields: Collection[str]) -> pl.DataFrame:
    frame = pl.read_csv(io.BytesIO(data), infer_schema=False, null_values=[""])
    absent = [f for f in fields if f not in frame.columns]
    return frame.select(
        *(pl.col(f) for f in fields if f in frame.columns), *(pl.lit(None, pl.String).alias(f) for f in absent),
        pl.format("row {}", pl.int_range(1, pl.len() + 1)).alias("where"),
    ).select(*fields, "where")


def _items(items: Any, fields: Collection[str], path: Path) -> pl.DataFrame:
    if not isinstance(items, list):
        raise InputError(f"{path}: expected a JSON array of records")
    rows = []
    for k, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InputError(f"{path}: record {k}: not a JSON object")
        rows.append({f: _text(item.get(f)) for f in fields} | {"where": f"record {k}"})
    return pl.DataFrame(rows, schema={**{f: pl.String for f in fields}, "where": pl.String})


def _wrapped(data: bytes, fields: Collection[str], path: Path, fmt: str) -> pl.DataFrame | None:
    """A paginated API answer, ``{"data": [records], ...}``; None when the file is JSON lines."""
    try:
        whole = json.loads(data)
    except json.JSONDecodeError:
        first = data.lstrip().split(b"\n", 1)[0]
        with suppress(json.JSONDecodeError):
            _refuse_otel(json.loads(first), path, fmt)  # the collector's file exporter: one export a line
        return None  # more than one value: JSON lines
    _refuse_otel(whole, path, fmt)
    if isinstance(whole, dict) and isinstance(whole.get("data"), list):
        return _items(whole["data"], fields, path)
    return None


def _refuse_otel(document: object, path: Path, fmt: str) -> None:
    """An OpenTelemetry export given to another format's reader: say which command reads it."""
    if isinstance(document, dict) and "resourceSpans" in document:
        raise InputError(f"{path}: this looks like an OTel export (OTLP/JSON resourceSpans), not {fmt} records: use `sfqtui import otel`")


def _lines(data: bytes, fields: Collection[str], path: Path) -> pl.DataFrame:
    numbers = [k for k, line in enumerate(data.split(b"\n"), start=1) if line.strip()]
    try:
        frame = pl.read_ndjson(io.BytesIO(data), schema={f: pl.String for f in fields})
    except pl.exceptions.PolarsError:
        bad = first_bad_json_line(data.split(b"\n"), path)
        if bad is not None:
            raise bad from None
        raise
    if frame.height != len(numbers):  # never seen; line numbers would be wrong
        raise InputError(f"{path}: cannot be read as JSON lines ({frame.height:,} records in {len(numbers):,} lines)")
    return frame.with_columns(pl.Series("where", [f"line {k}" for k in numbers], dtype=pl.String))


def first_bad_json_line(lines: Iterable[bytes], path: Path) -> InputError | None:
    """The error for the first line (of JSON lines) that is not a JSON object; None if every line is one."""
    for k, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line.rstrip(b"\r\n"))  # a column past the line's end would mislead
        except json.JSONDecodeError as exc:
            return InputError(f"{path}: line {k}: not JSON ({exc.msg}, column {exc.pos + 1})")
        if not isinstance(value, dict):
            return InputError(f"{path}: line {k}: not a JSON object")
    return None


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)
