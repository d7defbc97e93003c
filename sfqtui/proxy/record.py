"""``--record``: every finished request as a row of a semantics §1 trace, for ``sfqtui replay``.

A row is written for each request that was dispatched (answered, failed or abandoned),
with the upstream's actual ``usage`` when it reported one: ``input_tokens`` (the
proxy's approximation when it did not), ``output_tokens``, and ``service_s``, how long
the request held its slot. Requests cancelled while queued never ran and have no row.
No ``cost`` column: a replay prices the requests with its own estimator options.

Each flush rewrites the whole file atomically, so the file on disk is always a
complete trace, even after a crash. Rows are kept in memory as compact Arrow columns;
the time between flushes grows with the time a write takes, so writing never takes
more than about a tenth of the proxy's time. A group replica's metadata also lists the
changes of its bound (``bound``: each ``bound`` event of its stream, docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import polars as pl

from sfqtui.errors import InputError
from sfqtui.trace.load import frame_of
from sfqtui.trace.schema import TRACE_SCHEMA
from sfqtui.trace.write import write_trace

COLUMNS = ["request_id", "user", "arrival_s", "input_tokens", "max_tokens", "output_tokens", "service_s", "weight", "model"]
SCHEMA = frame_of(TRACE_SCHEMA.empty_table().select(COLUMNS)).schema
WRITE_SHARE = 10  # wait at least this many times as long as the last write took


class TraceRecorder:
    def __init__(self, path: Path, metadata: dict[str, Any], every_s: float) -> None:
        if not every_s > 0:
            raise InputError("the record's flush interval must be > 0")
        self.path = Path(path)
        self._metadata = metadata
        self._every_s = every_s
        self._pending: list[dict[str, Any]] = []
        self._written: list[pl.DataFrame] = []
        self._bounds: list[dict[str, Any]] = []
        self._changed = False  # the bound changed since the last write
        self._stop = asyncio.Event()

    @property
    def rows(self) -> int:
        return sum(f.height for f in self._written) + len(self._pending)

    def add(self, row: dict[str, Any]) -> None:
        self._pending.append(row)

    def note_bound(self, bound: dict[str, Any]) -> None:
        """A group replica's bound changed: kept in the metadata's ``bound`` list (the bound event, without its run)."""
        self._bounds.append({k: v for k, v in bound.items() if k != "run"})
        self._changed = True

    async def _flush(self) -> float:
        """Write the file if rows came in, or the bound changed, since the last write; returns how long the write took."""
        if not self._pending and not (self._changed and self._written):
            return 0.0
        self._changed = False
        if self._pending:
            self._written.append(pl.DataFrame(self._pending, schema=SCHEMA))
        self._pending = []
        frame = pl.concat(self._written, rechunk=False)
        started = time.perf_counter()
        metadata = {**self._metadata, "bound": list(self._bounds)} if self._bounds else self._metadata
        await asyncio.to_thread(write_trace, frame, self.path, metadata)
        return time.perf_counter() - started

    async def run(self) -> None:
        """Flush periodically; after ``stop``, flush once more and return. The only writer, so writes never overlap."""
        wait = self._every_s
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), wait)
            except TimeoutError:
                pass
            wait = max(self._every_s, WRITE_SHARE * await self._flush())

    def stop(self) -> None:
        self._stop.set()
