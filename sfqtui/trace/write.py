"""Write a trace frame to Parquet with our metadata, atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from sfqtui.paths import atomic_output
from sfqtui.trace.schema import METADATA_KEY


def write_trace(frame: pl.DataFrame, path: Path, metadata: dict[str, Any]) -> None:
    table = frame.to_arrow()
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True).encode()})
    with atomic_output(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_metadata(path: Path) -> dict[str, Any]:
    """Our metadata, from the file's key-value metadata (where pyarrow and polars both write it)."""
    raw = pq.read_metadata(path).metadata or {}
    return json.loads(raw[METADATA_KEY]) if METADATA_KEY in raw else {}
