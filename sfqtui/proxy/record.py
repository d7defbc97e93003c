"""``--record``: every finished request as a row of a semantics §1 trace, for ``sfqtui replay``.

A row is written for each request that was dispatched (answered, failed or abandoned):
its ``input_tokens`` (the upstream's ``usage`` when it reported one, else the proxy's
approximation), ``max_tokens``, ``output_tokens``, ``model`` and ``weight``, and what the
scheduler decided with: ``cost``, the charge it was dispatched with, and beside it the
estimator's figures at that dispatch (``ratio``, ``est_output``, ``ratio_scope``: extra
columns a replay does not read), and ``cached_tokens``, the prompt tokens the upstream's
prefix cache held (its usage's ``prompt_tokens_details.cached_tokens``; null when it did not
say), and ``engine_start_s``, when its engine began running it where the upstream said so (the
time of its ``start`` event; null otherwise). ``prefix_blocks`` are the chained hashes of the prompt's whole blocks of ``block_tokens``
(a metadata key) tokens as the proxy counts them without a tokenizer (4 characters a token,
``sfqtui.core.engines.prompt_blocks``), as many as the row's ``input_tokens`` holds; ``upstream``, where it was sent (as /metrics names
it), and with ``--placement prefix`` ``predicted_cached_tokens``, the blocks of its prompt the
proxy's index said that upstream held, in tokens (``placement`` in the metadata). ``priority``,
``flow`` and ``class`` are what the request said of itself (its body's ``priority`` or the
headers, ``sfqtui.proxy.attributes``), null where it said nothing (a column no request said is
left out), so that a replay under
``--scheduler llm-d``, ``dynamo`` or ``litellm`` reads them as the proxy's scheduler did. Requests
cancelled while queued never ran and have no row.

The times come from the decisions the proxy published (``/v1/sfq/events``, the ring's
events), so that a replay of the recording meets the same events in the same order and
makes the same decisions: ``arrival_s`` is the time of the request's ``arrive`` event,
and ``service_s`` the time from its ``dispatch`` to its ``complete``. A dispatch is timed
by the arrival or completion that freed it (the replay dispatches at that instant too),
and the events of one store call (a group's batch, which share one time) are spread
``OP_SPACING_S`` apart in their order, so that a replay takes them one at a time as the
store did. A row whose events the replica never saw (it served on its own while the store
was away) keeps the times the replica measured.

Each flush rewrites the whole file atomically, so the file on disk is always a
complete trace, even after a crash. Rows are kept in memory as compact Arrow columns;
the time between flushes grows with the time a write takes, so writing never takes
more than about a tenth of the proxy's time. A group replica's metadata also lists the
changes of its bound (``bound``: each ``bound`` event of its stream, docs/protocol.md), and a
recording under ``--slots auto`` the capacity in force as it changed (``capacity``: each
``limit`` event's time, timed as the operations are, seq, upstream, limit and reason; the slots
are the limits' sum), so that a replay follows it (docs/semantics.md §13).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from sfqtui import __version__
from sfqtui.core.numbers import counted
from sfqtui.errors import InputError
from sfqtui.protocol import BoundEvent, Event
from sfqtui.trace.load import frame_of
from sfqtui.trace.schema import TRACE_SCHEMA
from sfqtui.trace.write import write_trace

if TYPE_CHECKING:
    from sfqtui.proxy.group import Group
    from sfqtui.proxy.settings import ProxySettings

COLUMNS = ["request_id", "user", "arrival_s", "input_tokens", "max_tokens", "output_tokens", "cost", "service_s", "weight", "model"]
# What priced each request at its dispatch: not §1 columns, so a replay leaves them unread.
ESTIMATOR_COLUMNS: dict[str, pl.DataType] = {"ratio": pl.Float64(), "est_output": pl.Float64(), "ratio_scope": pl.String()}
# What the upstream's engine said of the request: the prompt tokens its prefix cache held (null when it did not say),
# and when it began running it (its start event, on arrival_s's clock; else null).
# And the prompt's blocks as the proxy named them (semantics §14, sfqtui.core.engines.prompt_blocks).
# Where it went: the upstream, and with --placement prefix the tokens its index said that upstream held.
ENGINE_COLUMNS: dict[str, pl.DataType] = {"cached_tokens": pl.Int64(), "engine_start_s": pl.Float64(), "prefix_blocks": pl.List(pl.UInt64()),
                                          "upstream": pl.String(), "predicted_cached_tokens": pl.Int64()}
# What each request said of itself (semantics §15): §1 columns a policy's replay reads; null where it said nothing.
POLICY_COLUMNS = ["priority", "flow", "class"]
SCHEMA = pl.Schema({**frame_of(TRACE_SCHEMA.empty_table().select(COLUMNS + POLICY_COLUMNS)).schema, **ESTIMATOR_COLUMNS, **ENGINE_COLUMNS})
WRITE_SHARE = 10  # wait at least this many times as long as the last write took
# Apart in time, the events of one store call in the recording: well under the store clock's
# microsecond, so they never pass an event of another call.
OP_SPACING_S = 1e-9
# What a dispatch follows: an arrival, a completion, a cancel, or a limit's change (a rise lets requests go).
_OPS = ("arrive", "complete", "cancel", "limit")


class Decisions:
    """Each recorded request's times and charge, as the published events tell them."""

    def __init__(self, mine: Callable[[Event], bool]) -> None:
        self._mine = mine
        self._t: float | None = None  # the time of the events being read, and how many operations had it
        self._ops = 0
        self.op_t = 0.0  # the time of the last arrival, completion or cancel: what a dispatch now follows
        self.requests: dict[str, dict[str, Any]] = {}  # request id -> what its events said, until its row is written
        # --slots auto: each limit's change, as the metadata's capacity table keeps it (docs/traces.md).
        self.capacity: dict[str, list[Any]] = {"t": [], "seq": [], "upstream": [], "limit": [], "reason": []}

    def see(self, event: Event) -> str | None:
        """Take one event; returns the request id when it completed one of this recording's requests."""
        kind = event["kind"]
        if kind in _OPS:
            t = event["t"]
            if t == self._t:
                self._ops += 1
            else:
                self._t, self._ops = t, 0
            self.op_t = t + self._ops * OP_SPACING_S
        if kind == "limit":
            for column, value in zip(self.capacity, (self.op_t, event["seq"], event.get("upstream"), event.get("limit"), event.get("reason")),
                                     strict=True):
                self.capacity[column].append(value)
            return None
        rid = event.get("request_id")
        if rid is None or not self._mine(event):
            return None
        if kind == "arrive":
            self.requests[rid] = {"arrival_s": self.op_t}
        elif kind == "cancel":
            self.requests.pop(rid, None)
        elif (seen := self.requests.get(rid)) is not None:
            if kind == "dispatch":
                seen.update(dispatched=self.op_t, cost=event["cost"], ratio=event.get("ratio"), est_output=event.get("est_output"))
            elif kind == "start":
                seen.setdefault("engine_start_s", event["t"])
            elif kind == "complete" and "dispatched" in seen:
                seen["service_s"] = max(OP_SPACING_S, self.op_t - seen.pop("dispatched"))  # > 0, as §1 asks
                return str(rid)
        return None


class TraceRecorder:
    """The rows of a recording: a finished request's own figures (``add``) joined with what
    its events said (``see``), written out every ``every_s`` seconds and when stopped."""

    def __init__(self, path: Path, metadata: Callable[[], dict[str, Any]], every_s: float,
                 mine: Callable[[Event], bool] = lambda _event: True) -> None:
        if not every_s > 0:
            raise InputError("the record's flush interval must be > 0")
        self.path = Path(path)
        self._earlier = self.path.exists()  # a file this recording has not written (yet): an earlier run's
        self._metadata = metadata
        self._every_s = every_s
        self.decisions = Decisions(mine)
        self._ended: dict[str, dict[str, Any]] = {}  # rows waiting for their request's complete event
        self._pending: list[dict[str, Any]] = []
        self._written: list[pl.DataFrame] = []
        self._bounds: list[dict[str, Any]] = []
        self._changed = False  # the bound changed since the last write
        self._stop = asyncio.Event()

    @property
    def rows(self) -> int:
        return sum(f.height for f in self._written) + len(self._pending)

    def said(self) -> str:
        """What the recording did, for the log when the proxy stops: a file left as it was is not claimed."""
        if self.rows:
            return f"recorded {counted(self.rows, 'request')} to {self.path}"
        if self._earlier:
            return f"recorded no request: {self.path} is left as it was"
        return f"recorded no request: {self.path} is not written"

    def add(self, row: dict[str, Any]) -> None:
        """A dispatched request ended; ``row`` holds its times and charge as the proxy measured them."""
        rid = row["request_id"]
        if "service_s" in self.decisions.requests.get(rid, ()):
            self._pending.append(row | self.decisions.requests.pop(rid))
        else:
            self._ended[rid] = row

    def note_bound(self, bound: BoundEvent) -> None:
        """A group replica's bound changed: kept in the metadata's ``bound`` list (the bound event, without its run)."""
        self._bounds.append({k: v for k, v in bound.items() if k != "run"})
        self._changed = True

    def see(self, event: Event) -> None:
        rid = self.decisions.see(event)
        if event["kind"] == "limit":
            self._changed = True
        if rid is not None and rid in self._ended:
            self._pending.append(self._ended.pop(rid) | self.decisions.requests.pop(rid))

    async def _flush(self, last: bool = False) -> float:
        """Write the file if rows came in, or the bound changed, since the last write; returns how long the write took."""
        if last:  # requests whose completion never reached the stream keep the proxy's own figures
            self._pending += self._ended.values()
            self._ended = {}
        if not self._pending and not (self._changed and self._written):
            return 0.0
        self._changed = False
        if self._pending:
            self._written.append(pl.DataFrame(self._pending, schema=SCHEMA))
        self._pending = []
        frame = pl.concat(self._written, rechunk=False)
        # A column no request said is left out, as in a trace without it (a replay then takes flows for users, and check audits their turns).
        frame = frame.drop([c for c in POLICY_COLUMNS if frame[c].null_count() == frame.height])
        started = time.perf_counter()
        metadata = self._metadata()
        if self._bounds:
            metadata["bound"] = list(self._bounds)
        if "capacity" in metadata:
            metadata["capacity"] |= {column: list(values) for column, values in self.decisions.capacity.items()}
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
            wait = max(self._every_s, WRITE_SHARE * await self._flush(last=self._stop.is_set()))

    def stop(self) -> None:
        self._stop.set()


def recorder_of(path: Path, settings: ProxySettings, group: Group | None) -> TraceRecorder:
    """A proxy's recorder: a group replica records the requests it held; the metadata is
    what a replay needs (semantics §1), never a key or a token."""

    def metadata() -> dict[str, Any]:
        slots: int | str = settings.slots if settings.limits is None else f"auto:{settings.limits.maximum}"
        found: dict[str, Any] = {"sfqtui_version": __version__, "source": "sfqtui proxy", "slots": slots, "scheduler": settings.scheduler,
                                 "weights": dict(settings.keys.weights), "estimator": settings.estimator.as_dict(),
                                 "costs": "charged at dispatch", "block_tokens": settings.block_tokens,
                                 "placement": settings.placement}
        if settings.limits is not None:  # the slots followed the upstreams: their limits as they changed (the recorder adds them)
            found["capacity"] = {"slots": slots, "limit_from": settings.limit_from}
        if group is not None:
            found["group"] = {"replica": group.replica, "replicas": len(group.replicas), "share": "global", "slots": slots}
        return found

    def held(event: Event) -> bool:
        return group is None or str(event.get("replica")) == group.replica

    return TraceRecorder(path, metadata, settings.record_every_s, held)
