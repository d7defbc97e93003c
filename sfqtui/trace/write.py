"""Write a trace frame to Parquet with our metadata, atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from sfqtui.trace.schema import METADATA_KEY


def write_trace(frame: pl.DataFrame, path: Path, metadata: dict[str, Any]) -> None:
    path = Path(path)
    table = frame.to_arrow()
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True).encode()})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_metadata(path: Path) -> dict[str, Any]:
    raw = pq.read_schema(path).metadata or {}
    return json.loads(raw[METADATA_KEY]) if METADATA_KEY in raw else {}
