"""Saves what an EventStream yields as an event log (semantics §7) that ``sfqtui replay`` opens.

Batches are gathered into large row groups. A gap becomes a row of kind ``gap`` with
seq ``first_seq - 1``, so the log's seq column stays increasing and shows where events
are missing. The file appears when the writer closes (the event log writer's atomic
move), with everything received, also when the stream was interrupted; nothing is
written if no event came.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa

from sfqtui import __version__
from sfqtui.live.stream import EVENT_SCHEMA, Gap, Status
from sfqtui.protocol import gap_event
from sfqtui.trace.eventlog import EventLogWriter
from sfqtui.trace.schema import LOG_FORMAT

ROW_GROUP = 1 << 16


class StreamLogWriter:
    def __init__(self, path: Path, source: str) -> None:
        self.path = Path(path)
        self._source = source
        self._writer: EventLogWriter | None = None
        self._files = ExitStack()
        self._scheduler: str | None = None
        self._held: list[pa.Table] = []
        self._held_rows = 0
        self._last_t: float | None = None
        self._slots: int | None = None
        self.rows = 0

    def write(self, item: pa.Table | Gap | Status) -> None:
        """Take one item of the stream: batches and gaps are saved; statuses are not events."""
        if isinstance(item, Gap):
            state = item.state or {}
            self._slots = state.get("slots", self._slots)
            row = gap_event(item.first_seq, item.t if item.t is not None else self._last_t)
            row["scheduler"] = self._scheduler or state.get("scheduler") or row["scheduler"]
            self._hold(pa.Table.from_pylist([row], schema=EVENT_SCHEMA))
        elif isinstance(item, pa.Table) and item.num_rows:
            self._scheduler = self._scheduler or item["scheduler"][0].as_py()
            self._last_t = item["t"][-1].as_py()
            self._hold(item)

    def _hold(self, table: pa.Table) -> None:
        self._held.append(table)
        self._held_rows += table.num_rows
        if self._held_rows >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._held_rows:
            return
        table = pa.concat_tables(self._held)
        if self._writer is None:
            self._writer = self._files.enter_context(EventLogWriter(self.path, self._metadata(table["scheduler"][0].as_py())))
        self._writer.write(table)
        self.rows += table.num_rows
        self._held, self._held_rows = [], 0

    def _metadata(self, scheduler: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"sfqtui_version": __version__, "format": LOG_FORMAT, "scheduler": scheduler,
                                "source": f"live stream {self._source}"}
        if self._slots is not None:
            meta["slots"] = self._slots
        return meta

    def __enter__(self) -> StreamLogWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        # Saved also when the stream was interrupted: the events received so far are a correct log.
        with self._files:
            self._flush()
