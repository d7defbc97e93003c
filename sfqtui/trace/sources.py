"""Event sources for the views: a trace replayed by the core, or a saved event log.

Both yield the same thing: ``(EventBatch, fraction done)`` pairs, built from Arrow tables
with the §7 columns by one converter (a live stream is a third source, in sfqtui.attach;
its fraction is None, since it never ends), and between them the source's notices
(sfqtui.trace.notices). Request ids stay in Arrow: each request gets
a code when it is first seen, and its id is kept once, in one growing store of Arrow
string chunks.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.analysis.audit import PolicyLog, Replicas, Violation, audit
from sfqtui.core.events import ARRIVE, CANCEL, COMPLETE, DISPATCH, IDLE_RESET, KINDS, START
from sfqtui.core.log.rows import rows_from_replay
from sfqtui.core.log.table import EventBatch
from sfqtui.core.replay.config import NOT_RECORDED_CAPACITY, REPRICED, ReplayConfig, slots_said
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.core.schedulers.registry import REGISTRY
from sfqtui.errors import InputError
from sfqtui.protocol import StateSnapshot
from sfqtui.trace.eventlog import KIND_NAMES, RowCheck, iter_log_rows, output_weight_of, read_log_schema
from sfqtui.trace.load import LoadedTrace, readable
from sfqtui.trace.notices import Notice, WindowStarts
from sfqtui.trace.replay_batches import replay_batches
from sfqtui.trace.request_names import ArrowRequestNames
from sfqtui.trace.simulate import replay_metadata

FIRST_ROWS = 4096


class EventSource(Protocol):
    """A run's events in batches, each with the fraction loaded so far (None: the source
    never ends), and between them what else the source says (notices, matched by type)."""

    scheduler: str
    title: str
    metadata: dict[str, Any]

    def batches(self) -> Iterator[tuple[EventBatch | Notice, float | None]]: ...

    def close(self) -> None:
        """Stop now: ``batches()`` ends at once, whatever the source waits on."""


def _typed(typecode: str, values: np.ndarray) -> array:
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values).tobytes())
    return out


def _floats(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)


class ArrowBatcher:
    """Converts §7 Arrow tables to EventBatches.

    Users get codes in order of appearance. A request gets a code when it arrives (or,
    in a stream joined late, when it is first seen); while it is waiting or running its
    id is kept in ``_pending`` to find the code of its later events, and dropped once it
    completes or is cancelled, so the lookup set stays as small as the backlog.
    """

    def __init__(self, value_column: str = "meter") -> None:
        self.value_column = value_column
        self.names: list[str] = []
        self._codes: dict[str, int] = {}
        self.requests = ArrowRequestNames()
        self._pending_ids = pa.array([], pa.string())
        self._pending_codes = np.zeros(0, dtype=np.int64)
        self._events = 0
        self._dispatches = 0

    def add_users(self, names: list[str]) -> list[str]:
        """Give codes to users known from elsewhere (a state snapshot); returns the new ones,
        which the table must be told of, since no batch will introduce them."""
        new = [name for name in dict.fromkeys(names) if name not in self._codes]
        for name in new:
            self._codes[name] = len(self.names)
            self.names.append(name)
        return new

    def new_window(self) -> tuple[list[str], list[int]]:
        """Start a new window of events (a new table, for a source that never ends): event
        and dispatch counts restart at 0, and requests still waiting or running are given
        new codes in a fresh store, so nothing of earlier windows is kept. Returns the
        requests carried over: their ids and their codes before."""
        self._events = self._dispatches = 0
        carried = self._pending_ids
        before = self._pending_codes
        self.requests = ArrowRequestNames()
        self.requests.extend(carried)
        self._pending_codes = np.arange(len(carried), dtype=np.int64)
        return carried.to_pylist(), before.tolist()

    def convert(self, table: pa.Table) -> EventBatch:
        n = table.num_rows
        kinds_arrow = pc.index_in(table["kind"].cast(pa.string()), value_set=KIND_NAMES)
        if kinds_arrow.null_count:
            bad = table["kind"].filter(pc.is_null(kinds_arrow))[0].as_py()
            raise InputError(f"unknown event kind {bad!r}; known kinds: {', '.join(KINDS)}")
        kinds = kinds_arrow.to_numpy(zero_copy_only=False).astype(np.int8)
        users, new_users, weights = self._users(table)
        req = self._requests(table["request_id"].cast(pa.string()).combine_chunks(), kinds)
        start = self._events
        positions = np.arange(start, start + n, dtype=np.int64)
        is_dispatch = kinds == DISPATCH
        columns = table.column_names

        def per_dispatch(name: str) -> array:
            if name not in columns:
                return array("d", [np.nan]) * int(is_dispatch.sum())
            return _typed("d", _floats(table[name])[is_dispatch])

        outputs: list[tuple[int, int]] = []
        if "output_tokens" in columns:
            tokens = pc.fill_null(table["output_tokens"].cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
            known = (kinds == COMPLETE) & (tokens >= 0) & (req >= 0)
            outputs = list(zip(req[known].tolist(), tokens[known].tolist()))
        cached = None
        # A live stream's tables have every column: only a value says the log carries cached tokens.
        if "cached_tokens" in columns and table["cached_tokens"].null_count < n:
            tokens = pc.fill_null(table["cached_tokens"].cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
            known = ((kinds == START) | (kinds == COMPLETE)) & (tokens >= 0) & (req >= 0)
            cached = list(zip(positions[known].tolist(), req[known].tolist(), tokens[known].tolist()))
        value = self.value_column if self.value_column in columns else "meter"
        batch = EventBatch(
            start=start,
            kind=_typed("b", kinds),
            user=_typed("i", users),
            new_users=new_users,
            new_user_weights=weights,
            req=_typed("i", req.astype(np.int32)),
            requests=len(self.requests),
            names=self.requests,
            t=_typed("d", _floats(table["t"])),
            v=_typed("d", _floats(table["v"])),
            value=_typed("d", _floats(table[value])),
            first_dispatch=self._dispatches,
            cost=per_dispatch("cost"),
            est_output=per_dispatch("est_output"),
            ratio=per_dispatch("ratio"),
            dispatch_events=_typed("q", positions[is_dispatch]),
            arrive_events=_typed("q", positions[kinds == ARRIVE]),
            finish_events=_typed("q", positions[(kinds == COMPLETE) | (kinds == CANCEL)]),
            idle_events=_typed("q", positions[kinds == IDLE_RESET]),
            outputs=outputs,
            replica=_typed("i", pc.fill_null(table["replica"].cast(pa.int32()), -1).to_numpy(zero_copy_only=False)) if "replica" in columns else None,
            cached=cached,
            placed=_placed(table, kinds, req, positions),
        )
        self._events += n
        self._dispatches += int(is_dispatch.sum())
        return batch

    def _users(self, table: pa.Table) -> tuple[np.ndarray, list[str], list[float]]:
        users = table["user"].cast(pa.string())
        appeared = [u for u in pc.unique(users).drop_null().to_pylist() if u not in self._codes]
        for name in appeared:
            self._codes[name] = len(self.names)
            self.names.append(name)
        codes = pc.fill_null(pc.index_in(users, value_set=pa.array(self.names, pa.string())), -1).to_numpy(zero_copy_only=False).astype(np.int32)
        weights = [1.0] * len(appeared)
        if appeared and "weight" in table.column_names:
            column = pc.fill_null(table["weight"].cast(pa.float64()), 1.0).to_numpy(zero_copy_only=False)
            first_new = len(self.names) - len(appeared)
            found, first_row = np.unique(codes, return_index=True)
            where = dict(zip(found.tolist(), first_row.tolist()))
            weights = [float(column[where[first_new + i]]) for i in range(len(appeared))]
        return codes, appeared, weights

    def _requests(self, ids: pa.Array, kinds: np.ndarray) -> np.ndarray:
        """The code of each row's request (-1: none), giving new requests the next codes."""
        has_id = ~pc.is_null(ids).to_numpy(zero_copy_only=False)
        arrives = (kinds == ARRIVE) & has_id
        codes = np.full(len(ids), -1, dtype=np.int64)
        first = len(self.requests)
        arrived_ids = ids.filter(pa.array(arrives))
        codes[arrives] = np.arange(first, first + len(arrived_ids))
        self.requests.extend(arrived_ids)
        known_ids = pa.concat_arrays([self._pending_ids, arrived_ids])
        known_codes = np.concatenate([self._pending_codes, codes[arrives]])
        later = has_id & ~arrives
        if later.any():
            later_ids = ids.filter(pa.array(later))
            at = pc.index_in(later_ids, value_set=known_ids)
            unseen = pc.is_null(at).to_numpy(zero_copy_only=False)
            found = pc.fill_null(at, 0).to_numpy(zero_copy_only=False)
            later_codes = known_codes[found] if len(known_codes) else np.zeros(len(found), dtype=np.int64)
            if unseen.any():  # a stream joined after these requests arrived
                new_ids = pc.unique(later_ids.filter(pa.array(unseen)))
                new_codes = np.arange(len(self.requests), len(self.requests) + len(new_ids))
                self.requests.extend(new_ids)
                at_new = pc.index_in(later_ids.filter(pa.array(unseen)), value_set=new_ids).to_numpy(zero_copy_only=False)
                later_codes[unseen] = new_codes[at_new]
                known_ids = pa.concat_arrays([known_ids, new_ids])
                known_codes = np.concatenate([known_codes, new_codes])
            codes[later] = later_codes
        finished = has_id & ((kinds == COMPLETE) | (kinds == CANCEL))
        if finished.any() or len(known_ids) != len(self._pending_ids):
            keep = ~pc.is_in(known_ids, value_set=ids.filter(pa.array(finished))).to_numpy(zero_copy_only=False)
            self._pending_ids = known_ids.filter(pa.array(keep))
            self._pending_codes = known_codes[keep]
        return codes


def _placed(table: pa.Table, kinds: np.ndarray, req: np.ndarray, positions: np.ndarray) -> list[tuple[int, int, str, int]]:
    """(event index, request code, upstream, predicted cached tokens or -1) of the dispatch and
    start rows that name an upstream (``EventBatch.placed``)."""
    if "upstream" not in table.column_names:
        return []
    names = table["upstream"].cast(pa.string())
    rows = np.flatnonzero(~pc.is_null(names).to_numpy(zero_copy_only=False) & ((kinds == DISPATCH) | (kinds == START)) & (req >= 0))
    if not len(rows):
        return []
    predicted = np.full(len(kinds), -1, dtype=np.int64)
    if "predicted_cached_tokens" in table.column_names:
        predicted = pc.fill_null(table["predicted_cached_tokens"].cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
    return list(zip(positions[rows].tolist(), req[rows].tolist(), names.take(pa.array(rows)).to_pylist(), predicted[rows].tolist()))


def value_column(scheduler: str) -> str:
    """Which §7 column holds the scheduler's own per-user number."""
    traits = REGISTRY.get(scheduler)
    return traits.reading if traits is not None and traits.reading else "meter"


@dataclass
class ReplaySource:
    """Replays a loaded trace with the core, a chunk at a time."""

    loaded: LoadedTrace
    config: ReplayConfig
    chunk: int = 1 << 16

    def __post_init__(self) -> None:
        self.replay = Replay(self.loaded.trace, self.config)
        self.scheduler = self.config.scheduler
        replicas = self.config.replicas
        where = f", {replicas.describe()}" if replicas.replicated else ""
        self.metadata = replay_metadata(self.replay, self.loaded)
        priced = f", {REPRICED}" if self.metadata.get("repriced") else ""
        priced += f", {NOT_RECORDED_CAPACITY}" if self.metadata.get("capacity_ignored") else ""
        engines = f", on {self.config.engine.describe()}" if self.config.engine is not None else ""
        self.title = f"{self.loaded.path.name}, {self.scheduler}, {slots_said(self.config)}{where}{priced}{engines}"

    def batches(self) -> Iterator[tuple[EventBatch, float | None]]:
        yield from replay_batches(self.replay, self.loaded, value_column(self.scheduler), self.chunk)

    def close(self) -> None:
        """Nothing to stop: the replay runs on the thread that reads its batches."""

    def audit(self) -> list[Violation]:
        """Where the replay breaks an invariant, and which: the replay run again chunk by chunk
        (it is deterministic), with the estimator and replicas it was set up with."""
        rows = (rows_from_replay(columns, self.loaded.trace, self.scheduler) for columns, _arrived in self.replay.chunks())
        policy = PolicyLog("flow" not in self.replay.requests.columns, self.replay.plan.credit_bound)
        return audit(rows, self.config.estimator.output_weight, Replicas(self.config.replicas), policy=policy).violations


@dataclass
class LogFileSource:
    """Streams a saved event log row group by row group."""

    path: Path
    batch_rows: int = 1 << 17

    def __post_init__(self) -> None:
        self.metadata, columns, self.scheduler = read_log_schema(self.path)
        self._columns = columns
        self.title = f"{self.path.name}, {self.scheduler} log"

    def close(self) -> None:
        """Nothing to stop: the file is read on the thread that reads its batches."""

    def audit(self) -> list[Violation]:
        """Where the log breaks an invariant, and which, read batch by batch (the audit behind check)."""
        replicas = Replicas(ReplicaSettings.from_metadata(self.metadata.get("replicas")), self.metadata.get("slots"))
        return audit(iter_log_rows(self.path), output_weight_of(self.metadata), replicas, policy=PolicyLog.from_metadata(self.metadata)).violations

    def batches(self) -> Iterator[tuple[EventBatch | Notice, float | None]]:
        """The log's events, the first few on their own; InputError for what cannot be shown
        (an unreadable page, an unknown kind, a second scheduler) once it is reached: the
        dashboard opened on the footer and the first rows (cli/openings.py), not the whole file."""
        parquet = pq.ParquetFile(self.path)
        total = max(1, parquet.metadata.num_rows)
        batcher = ArrowBatcher(value_column(self.scheduler))
        rows = RowCheck(self.path)
        snapshot = self.metadata.get("snapshot")
        if isinstance(snapshot, dict):  # a log from a proxy's state: its users coded first, as the run's window has them
            users = tuple(batcher.add_users([str(u["user"]) for u in snapshot.get("users", [])]))
            if isinstance(snapshot.get("seq"), int):  # its window starts from that state (semantics §7)
                yield WindowStarts(snapshot["seq"], cast("StateSnapshot", snapshot), users, users), 0.0
        # The first events are read on their own, in a small batch, so that the screen has
        # something to show at once (a full batch decodes a whole row group's pages first).
        head = next(readable(self.path, parquet.iter_batches(batch_size=min(FIRST_ROWS, self.batch_rows), columns=self._columns)), None)
        if head is None:
            return
        done = skip = head.num_rows  # at most one batch: the first batch of the full read holds the head's rows
        if done:
            rows.check(head)
            yield batcher.convert(pa.Table.from_batches([head])), done / total
        for record_batch in readable(self.path, parquet.iter_batches(batch_size=self.batch_rows, columns=self._columns)):
            part, skip = record_batch.slice(skip), 0
            if part.num_rows:
                rows.check(part)
                done += part.num_rows
                yield batcher.convert(pa.Table.from_batches([part])), done / total
