"""Search and export on a big event log (issue 15 §7): what `/`, N and the palette's exports cost.

Prints, for a saved log (made with `sfqtui gen production` and `sfqtui simulate` if none
is given):
- `/` on a request id, on a user name and on a part of an id that most requests share:
  the first search (the matches found in bulk) and the next match (N, a bisect); target:
  the first well under a frame's worth of waiting for a person (100 ms), N under 1 ms;
- an export of the whole log: the part on the main thread (fixing what to write) and the
  part on the worker (gathering the columns, writing CSV and Parquet).

Usage: python benchmarks/interact_bench.py [--log LOG] [--requests N]
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.export_frames import ListedRows, log_frame, write
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.ui.panes.event_log import EventLog, EventLogHeader
from sfqtui.ui.panes.search import LogSearch

T = TypeVar("T")


def made_log(requests: int, folder: Path) -> Path:
    trace, log = folder / "trace.parquet", folder / "log.parquet"
    subprocess.run([sys.executable, "-m", "sfqtui", "gen", "production", "--requests", str(requests), "-o", str(trace)], check=True)
    subprocess.run([sys.executable, "-m", "sfqtui", "simulate", str(trace), "-o", str(log)], check=True)
    return log


def timed(what: str, action: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = action()
    print(f"{what:<58} {1000 * (time.perf_counter() - start):9.1f} ms")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=Path)
    parser.add_argument("--requests", type=int, default=340_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        log = args.log or made_log(args.requests, Path(folder))
        run = Run(Opening(log, is_log=True, config=ReplayConfig())).load_all()
        table = run.table
        print(f"{log}: {len(table):,} events, {len(table.users):,} users")
        k = len(table) // 2
        request = table.request_id(table.dispatches[len(table.dispatches) // 2])
        assert request is not None
        for text in (request, table.users[len(table.users) // 2], "r0"):
            search = LogSearch()
            search.text = text
            found = timed(f"/ {text}: first search (finds the matches)", functools.partial(search.step, table, None, k, 1))
            assert found is not None
            timed(f"  N ({found.count:,} matches)", functools.partial(search.step, table, None, found.k, 1))
        events = EventLog(EventLogHeader())
        events.use(table)
        rows = timed("export: fixed on the main thread", lambda: ListedRows.of(table, events.listed))
        data = timed("export: the columns gathered on the worker", lambda: log_frame(rows))
        for suffix in (".csv", ".parquet"):
            path = Path(folder) / f"export{suffix}"
            timed(f"export: {data.height:,} rows written as {suffix[1:]}", functools.partial(write, data, path))


if __name__ == "__main__":
    main()
