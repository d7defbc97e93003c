"""A live proxy's event stream as a source for the dashboard: it never ends.

It yields the same event batches as a replay or a saved log, and, between them,
notices: the connection's state, and the start of a new window. The dashboard keeps a
window of recent events in memory: when a window holds ``window`` events, or when
events were lost (a gap: the proxy's ring no longer held them), the next batch starts a
new table, seeded with the state the last one ended in or, after a gap, the state the
proxy reports. Older events live only in the ``--record`` log, if one is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc

from sfqtui.core.analysis.audit import GrowingAudit, Violation
from sfqtui.core.log.table import EventBatch
from sfqtui.live.stream import EVENT_SCHEMA, EventStream, Gap, Status, proxy_base
from sfqtui.live.stream_log import StreamLogWriter
from sfqtui.protocol import gap_event
from sfqtui.trace.eventlog import rows_of
from sfqtui.trace.sources import ArrowBatcher

WINDOW = 1_000_000  # events kept in memory


@dataclass(frozen=True)
class Notice:
    """Not events: ``connection`` changed, or a new window starts (``window``: its first
    seq; ``state``: the proxy's state to seed it with after a gap, else None)."""

    connection: str | None = None
    detail: str = ""
    window: int | None = None
    state: dict[str, Any] | None = None
    new_users: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)  # every user by code, at the window's start
    violations: list[Violation] | None = None  # the invariant violations found so far, by seq
    audit_stopped: str | None = None  # why the audit of the stream stopped


class LiveSource:
    def __init__(self, url: str, token: str | None = None, record: Path | None = None, window: int = WINDOW) -> None:
        self.url = proxy_base(url)
        self._token = token
        self._record = record
        self._window = window
        self._stream: EventStream | None = None
        state = self._state()
        self.scheduler = state.get("scheduler", "sfq") if state else "sfq"
        self.metadata: dict[str, Any] = {"source": f"live stream {self.url}", "slots": state.get("slots") if state else None}
        self.title = f"live: {self.url}"

    def _state(self) -> dict[str, Any] | None:
        headers = {"authorization": f"Bearer {self._token}"} if self._token else {}
        try:
            response = httpx.get(f"{self.url}/v1/sfq/state", headers=headers, timeout=5.0)
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError):
            return None

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()

    def batches(self) -> Iterator[tuple[EventBatch | Notice, float | None]]:
        batcher = ArrowBatcher()
        seq = 0  # the seq of the next event to show
        in_window = 0
        last_t = 0.0
        audit: GrowingAudit | None = GrowingAudit(self.scheduler)
        found: list[Violation] = []
        with ExitStack() as files:
            record = files.enter_context(StreamLogWriter(self._record, self.url)) if self._record else None
            self._stream = stream = files.enter_context(EventStream(self.url, self._token))
            for item in stream:
                if record is not None:
                    record.write(item)
                if isinstance(item, Status):
                    yield Notice(connection=item.state, detail=item.detail), None
                elif isinstance(item, Gap):
                    if audit is not None:
                        audit = None  # what was lost cannot be checked, nor what follows it
                        yield Notice(audit_stopped=f"the stream lost events before seq {item.first_seq}: the audit stopped there; "
                                                   "record the stream (--record) and run sfqtui check on the log"), None
                    # The proxy's state is as of its seq S: the new window starts there, and
                    # the held events up to S, already in that state, are skipped.
                    snapshot = item.state or {}
                    skip_through = int(snapshot.get("seq", item.first_seq - 1))
                    new_users = batcher.add_users([u["user"] for u in snapshot.get("users", [])])
                    batcher.new_window()
                    yield Notice(window=skip_through, state=item.state, new_users=new_users, users=list(batcher.names)), None
                    row = gap_event(skip_through + 1, item.t if item.t is not None else last_t)
                    row["scheduler"] = self.scheduler
                    yield batcher.convert(pa.Table.from_pylist([row], schema=EVENT_SCHEMA)), None
                    seq, in_window = skip_through + 1, 1
                elif item.num_rows:
                    if item["seq"][0].as_py() < seq:
                        item = item.filter(pc.greater_equal(item["seq"], seq))
                        if not item.num_rows:
                            continue
                    if in_window and in_window + item.num_rows > self._window:
                        batcher.new_window()
                        in_window = 0
                        yield Notice(window=seq, users=list(batcher.names)), None
                    yield batcher.convert(item), None
                    last_t = item["t"][-1].as_py()
                    if audit is not None:
                        audit.feed(rows_of(self.scheduler, item))
                        if audit.violations_so_far() != found:
                            found = audit.violations_so_far()
                            yield Notice(violations=found), None
                    seq += item.num_rows
                    in_window += item.num_rows
            yield Notice(connection="closed", detail="the stream ended"), None

