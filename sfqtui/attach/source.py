"""A live proxy's event stream as a source for the dashboard: it never ends.

It yields the same event batches as a replay or a saved log, and, between them,
notices: the connection's state, the start of a proxy run, and the start of a new
window. The stream's audit runs as it comes; a stream joined late (its first event is
not seq 0) is audited from the proxy's state at the join, as ``check`` audits its
recording. The dashboard keeps a window of recent events in memory: when a window holds
``window`` events, or when events were lost (a gap: the proxy's ring no longer held
them), the next batch starts a new table, seeded with the state the last one ended in
or, after a gap, the state the proxy reports. Older events live only in the ``--record``
log, if one is kept. A new proxy run (a restart) starts again from an empty state, seq
0, a user coding and an audit of its own. The events of a proxy that is not in a group
(its state names no ``bound`` and one replica) go without their ``replica`` column: a
lone proxy's events name none.

Nothing here waits on the network: the stream's reader thread does, so ``close()``
ends ``batches()`` at once, whatever the connection is doing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sfqtui.attach.bound import Bound, in_group, of_group
from sfqtui.attach.run_logs import RunLogs
from sfqtui.attach.stream import EVENT_SCHEMA, REFUSED, EventStream, Gap, RunStarted, Status, proxy_base
from sfqtui.core.analysis.audit import GrowingAudit, Snapshot, Violation
from sfqtui.core.log.table import EventBatch
from sfqtui.errors import InputError
from sfqtui.protocol import LIMIT, ProxyState, gap_event
from sfqtui.trace.eventlog import rows_of
from sfqtui.trace.notices import Notice, WindowStarts
from sfqtui.trace.sources import ArrowBatcher

WINDOW = 1_000_000  # events kept in memory
CLOSED = "closed"  # the connection state once the stream has ended


@dataclass(frozen=True)
class RecordingFailed(Notice):
    """The recording cannot be written where asked (it goes on elsewhere: ``problem`` says where)."""

    problem: str


@dataclass(frozen=True)
class LimitsHeard(Notice):
    """--slots auto: each upstream's limit, as the state and the limit events say."""

    limits: dict[str, int]


@dataclass(frozen=True)
class AuditSoFar(Notice):
    """The stream's audit found more: every invariant violation so far, by seq."""

    violations: list[Violation]


@dataclass(frozen=True)
class AuditStopped(Notice):
    """The stream's audit stopped, and why."""

    reason: str


def _audit_from(scheduler: str, state: ProxyState, first_seq: int) -> GrowingAudit | None:
    """The audit of a stream joined late, from the proxy's state at the join (docs/semantics.md
    §7); None when the state cannot start one (unread, malformed, or older than the events held)."""
    if not isinstance(state.get("seq"), int) or state["seq"] < first_seq - 1:
        return None
    try:
        snapshot = Snapshot.from_metadata(state)
    except InputError:
        return None
    return None if snapshot is None else GrowingAudit(scheduler, snapshot=snapshot)


class LiveSource:
    def __init__(self, urls: Sequence[str], token: str | None = None, record: RunLogs | None = None, window: int = WINDOW) -> None:
        self.urls = [proxy_base(url) for url in urls]
        self.url = self.urls[0]
        self._token = token
        self._record = record
        self._window = window
        self._stream = EventStream(self.urls, self._token)
        self.scheduler = "sfq"  # until a run's state says otherwise
        self.metadata: dict[str, Any] = {"source": f"live stream {', '.join(self.urls)}", "slots": None}
        self.title = f"live: {self.url}" + (f" (+{len(self.urls) - 1} more)" if len(self.urls) > 1 else "")

    def close(self) -> None:
        self._stream.close()

    def batches(self) -> Iterator[tuple[EventBatch | Notice, float | None]]:
        """The events, and between them the notices: the connection (``Status``), a proxy run
        (``RunStarted``, its events follow from an empty state), the group's bound (``Bound``),
        a new window (``WindowStarts``), the limits, the audit and the recording's problems."""
        batcher = ArrowBatcher()
        seq = 0  # the seq of the next event to show
        in_window = 0
        last_t = 0.0
        audit: GrowingAudit | None = GrowingAudit(self.scheduler)
        found: list[Violation] = []
        record, problem = self._record, None
        last_status: Status | None = None
        group: bool | None = None  # whether the run is a group's (None: its state could not be read)
        limits: dict[str, int] = {}
        try:
            for item in self._stream:
                if record is not None:
                    record.write(item)
                    if record.problem_now != problem:
                        problem = record.problem_now
                        if problem is not None:
                            yield RecordingFailed(problem), None
                if isinstance(item, Status):
                    last_status = item
                    yield item, None
                elif isinstance(item, RunStarted):
                    self.scheduler = (item.state.get("scheduler") if item.state else None) or self.scheduler
                    batcher, seq, in_window, last_t = ArrowBatcher(), 0, 0, 0.0
                    audit, found = GrowingAudit(self.scheduler), []
                    group = in_group(item.state)
                    yield item, None
                    if item.state and item.state.get("limits"):
                        limits = {row["upstream"]: row["limit"] for row in item.state["limits"]}
                        yield LimitsHeard(dict(limits)), None
                elif isinstance(item, Bound):
                    yield item, None
                elif isinstance(item, Gap):
                    # The proxy's state is as of its seq S: the new window starts there, and
                    # the held events up to S, already in that state, are skipped.
                    snapshot = item.state  # None: it could not be read
                    skip_through = int(snapshot.get("seq", item.first_seq - 1)) if snapshot else item.first_seq - 1
                    joined = _audit_from(self.scheduler, snapshot, item.first_seq) if snapshot and audit is not None and seq == 0 else None
                    if audit is not None and joined is None:
                        audit = None  # what was lost cannot be checked, nor what follows it
                        yield AuditStopped(f"the stream lost events before seq {item.first_seq}: the audit stopped there; "
                                                   "record the stream (--record) and run sfqtui check on the log"), None
                    new_users = batcher.add_users([u["user"] for u in snapshot.get("users", [])] if snapshot else [])
                    batcher.new_window()
                    yield WindowStarts(skip_through, item.state, tuple(new_users), tuple(batcher.names)), None
                    row = gap_event(skip_through + 1, item.t if item.t is not None else last_t)
                    row["scheduler"] = self.scheduler
                    if joined is not None and snapshot:
                        row["v"] = snapshot["v"]
                    head = of_group(pa.Table.from_pylist([row], schema=EVENT_SCHEMA), group)
                    yield batcher.convert(head), None
                    if joined is not None:  # joined late: the audit starts from the proxy's state, as check does on the recording
                        audit = joined
                        audit.feed(rows_of(self.scheduler, head))
                    seq, in_window = skip_through + 1, 1
                elif item.num_rows:
                    if item["seq"][0].as_py() < seq:
                        item = item.filter(pc.greater_equal(item["seq"], seq))
                        if not item.num_rows:
                            continue
                    # A batch larger than a window (the reader ran ahead while the screen was busy)
                    # is taken a window at a time, so that no window holds more than it should.
                    for start in range(0, item.num_rows, self._window):
                        part = item.slice(start, self._window)
                        if in_window and in_window + part.num_rows > self._window:
                            batcher.new_window()
                            in_window = 0
                            yield WindowStarts(seq, users=tuple(batcher.names)), None
                        yield batcher.convert(of_group(part, group)), None
                        if pc.any(pc.equal(part["kind"], LIMIT)).as_py():
                            changes = part.filter(pc.equal(part["kind"], LIMIT))
                            limits.update(zip(changes["upstream"].to_pylist(), changes["limit"].to_pylist(), strict=True))
                            yield LimitsHeard(dict(limits)), None
                        last_t = part["t"][-1].as_py()
                        if audit is not None:
                            audit.feed(rows_of(self.scheduler, part))
                            if audit.violations_so_far() != found:
                                found = audit.violations_so_far()
                                yield AuditSoFar(found), None
                        seq += part.num_rows
                        in_window += part.num_rows
            if last_status is None or last_status.state != REFUSED:  # a refusal stays on screen: it says what to do
                yield Status(CLOSED, "the stream ended", self._stream.url), None
        finally:
            self._stream.close()
            if record is not None:
                record.close()
