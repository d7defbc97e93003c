"""Several trace files read as one: a group's recordings (one a replica), or any traces of different requests.

The files are checked one by one (each must be a trace), their request ids must not
overlap, and their rows are joined into one trace file in a folder of its own that lives
as long as the command, named after them (``a+b.parquet``), which every command then
reads as it reads any trace. The joined metadata keeps what the files agree on (the
slots, a proxy's estimator and weights), and names the files.
"""

from __future__ import annotations

import atexit
import glob
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sfqtui.errors import InputError
from sfqtui.trace.load import read_parquet, validate
from sfqtui.trace.write import read_metadata, write_trace

GLOB_CHARACTERS = "*?["
TRACES_HELP = ("Trace Parquet file (semantics §1); several files, or a quoted pattern such as 'rec-*.parquet', "
               "are read as one trace (a group's recordings, one a replica).")


def expanded(paths: Sequence[Path]) -> list[Path]:
    """The paths, with a pattern the shell left alone (quoted, or matching nothing there) expanded here, in name order."""
    found: list[Path] = []
    for path in paths:
        if not path.exists() and any(c in str(path) for c in GLOB_CHARACTERS):
            matches = sorted(glob.glob(str(path)))
            if not matches:
                raise InputError(f"{path}: no file matches")
            found += map(Path, matches)
        else:
            found.append(path)
    return found


def named(paths: Sequence[Path]) -> str:
    """How a header names the trace that ``paths`` make."""
    return " + ".join(map(str, expanded(paths)))


def joined_trace(paths: Sequence[Path]) -> Path:
    """The one trace that ``paths`` make (the path itself when there is one); InputError for
    a file that is not a trace, or a request id in two files, with one line."""
    paths = expanded(paths)
    if len(paths) == 1:
        return paths[0]
    if len(set(paths)) != len(paths):
        twice = next(p for p in paths if paths.count(p) > 1)
        raise InputError(f"{twice} is given twice: each file is read once")
    for path in paths:
        validate(path)
    frames = [read_parquet(path, trace_columns=True) for path in paths]
    _refuse_shared_ids(paths, frames)
    folder = Path(tempfile.mkdtemp(prefix="sfqtui-joined-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    out = folder / ("+".join(p.stem for p in paths) + ".parquet")
    write_trace(pl.concat(frames, how="diagonal_relaxed"), out, _joined_metadata(paths))
    return out


def _refuse_shared_ids(paths: Sequence[Path], frames: Sequence[pl.DataFrame]) -> None:
    owners = pl.concat([f.select(pl.col("request_id").cast(pl.String)).with_columns(pl.lit(k).alias("file"))
                        for k, f in enumerate(frames)])
    shared = owners.filter(pl.col("request_id").is_duplicated())
    if shared.height:
        rid = shared["request_id"][0]
        first, second = shared.filter(pl.col("request_id") == rid)["file"][:2]
        raise InputError(f"{paths[first]} and {paths[second]} both hold request {rid!r}: files read as one trace must hold "
                         "different requests (a group's recordings, one a replica, do)")


def _joined_metadata(paths: Sequence[Path]) -> dict[str, Any]:
    """What every file's metadata agrees on, and the files' names."""
    each = [read_metadata(path) for path in paths]
    agreed = {key: value for key, value in each[0].items() if all(m.get(key) == value for m in each[1:])}
    agreed.pop("group", None)  # one replica's own; the joined trace is the group's
    groups = [m["group"] for m in each if isinstance(m.get("group"), dict)]
    if groups:
        agreed["group"] = {"replicas": [g.get("replica") for g in groups], "share": "global", "slots": groups[0].get("slots")}
    tables = [m["capacity"] for m in each if isinstance(m.get("capacity"), dict)]
    if tables:
        agreed["capacity"] = _one_capacity(tables)
    agreed["joined"] = [str(path) for path in paths]
    return agreed


def _one_capacity(tables: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A group's recordings' capacity tables (docs/traces.md) as one: every replica saw the
    group's limit events, each from when it joined to when it stopped, so their union by seq."""
    columns = ("t", "seq", "upstream", "limit", "reason")
    rows = {row[1]: row for table in tables for row in zip(*(table.get(c, []) for c in columns), strict=True)}
    merged = [rows[seq] for seq in sorted(rows)]
    return {**tables[0], **{c: [row[k] for row in merged] for k, c in enumerate(columns)}}
