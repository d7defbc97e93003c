"""A replay's packed rows straight into the views' EventBatches, without an Arrow table between.

A replay names requests by trace index and users by trace code. The dashboard's table
gives a request its code when it arrives, and a replay's requests arrive in trace order,
so the code of a request is its trace index; users get codes in order of appearance, as
`ArrowBatcher` gives them for any other source (tests/trace/test_replay_batches.py checks that
both give the same batches).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from itertools import repeat

import numpy as np
import pyarrow.compute as pc

from sfqtui.core.events import ARRIVE, CANCEL, COMPLETE, DISPATCH, IDLE_RESET, START, EventRows
from sfqtui.core.log.table import EventBatch
from sfqtui.core.pricing.estimator import Pricing
from sfqtui.core.replay.replay import Replay
from sfqtui.trace.eventlog import packed_columns
from sfqtui.trace.load import LoadedTrace
from sfqtui.trace.request_names import ArrowRequestNames
from sfqtui.trace.schema import CACHED, PREDICTED_CACHED


def _typed(typecode: str, values: np.ndarray) -> array:
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values).tobytes())
    return out


def _placed(columns: dict[str, np.ndarray], kinds: np.ndarray, req: np.ndarray, positions: np.ndarray,
            upstreams: Sequence[str] | None, predicted: np.ndarray | None) -> list[tuple[int, int, str, int]]:
    """(event index, request code, upstream, predicted cached tokens or -1) of the dispatch and start
    rows that name an upstream, as ArrowBatcher reads them from the log: an engine by its number, or a
    recording's upstream by its name in ``upstreams`` (``ReplayPlan.upstream_names``), its dispatch
    with the prediction ``predicted`` holds by request code (-1: none; None: the log has none)."""
    if "upstream" not in columns:
        return []
    upstream = columns["upstream"]
    rows = np.flatnonzero((upstream >= 0) & ((kinds == DISPATCH) | (kinds == START)) & (req >= 0))
    said = np.full(len(rows), -1) if predicted is None else np.where(kinds[rows] == DISPATCH, predicted[req[rows]], -1)
    found = zip(positions[rows].tolist(), req[rows].tolist(), upstream[rows].tolist(), said.tolist())
    if upstreams is None:
        return [(k, r, str(e), p) for k, r, e, p in found]
    return [(k, r, upstreams[e], p) for k, r, e, p in found]


def _cached(cached: dict[int, int] | None, recorded: np.ndarray | None, kinds: np.ndarray, req: np.ndarray,
            positions: np.ndarray) -> list[tuple[int, int, int]] | None:
    """(event index, request code, cached prompt tokens) of the start rows, from the engines' ``cached``,
    or of the complete rows, from the tokens ``recorded`` holds by request code (-1: not said; None: none says any)."""
    if recorded is not None:
        completes = np.flatnonzero((kinds == COMPLETE) & (req >= 0))
        tokens = recorded[req[completes]]
        said = tokens >= 0
        return list(zip(positions[completes][said].tolist(), req[completes][said].tolist(), tokens[said].tolist())) or None
    if cached is None:
        return None
    starts = kinds == START
    return [(k, r, cached[r]) for k, r in zip(positions[starts].tolist(), req[starts].tolist()) if r in cached] or None


def _recorded(loaded: LoadedTrace, name: str) -> np.ndarray | None:
    """A recording's figure per request code, -1 where it says none (None: it has no such column)."""
    if name not in loaded.table.column_names:
        return None
    return pc.fill_null(loaded.table[name], -1).to_numpy()


class ReplayBatcher:
    """Turns the rows a replay of ``loaded`` hands over into EventBatches, in order."""

    def __init__(self, loaded: LoadedTrace, value_column: str, upstreams: Sequence[str] | None = None, as_ran: bool = False) -> None:
        """``upstreams``: what the rows' upstream codes name (None: the engines, by number); ``as_ran``: a replay
        of a recording as it ran, whose rows name its upstreams and carry its figures (``ChunkEncoder``)."""
        trace = loaded.trace
        self._upstreams = upstreams
        self._predicted = _recorded(loaded, PREDICTED_CACHED) if as_ran else None
        self._cached = _recorded(loaded, CACHED) if as_ran else None
        self._names = list(trace.users)
        self._weights = trace.weights
        self._code = np.full(len(self._names), -1, dtype=np.int32)  # trace user code -> table code (-1: not seen yet)
        self._seen = 0
        self._ids = loaded.table["request_id"].combine_chunks()
        self.requests = ArrowRequestNames()
        self._outputs = None if trace.output_tokens is None else np.frombuffer(trace.output_tokens, dtype=np.int64)
        self._value = value_column
        self._events = 0
        self._dispatches = 0

    def convert(self, rows: EventRows, pricing: Pricing | None, cached: dict[int, int] | None = None) -> EventBatch:
        n = len(rows)
        columns = packed_columns(rows)
        kinds, req = columns["kind"], columns["req"]
        nan = np.full(n, np.nan)
        users, new_users = self._users(columns["user"])
        arrived = req[kinds == ARRIVE]
        if len(arrived):  # in trace order: the next codes are their trace indices
            self.requests.extend(self._ids.slice(int(arrived[0]), len(arrived)))
        positions = np.arange(self._events, self._events + n, dtype=np.int64)
        is_dispatch = kinds == DISPATCH
        dispatched = req[is_dispatch]

        def priced(by_request: dict[int, float] | None) -> array:
            if by_request is None:
                return array("d", [math.nan]) * len(dispatched)
            reqs = dispatched.tolist()
            return array("d", map(by_request.get, reqs, repeat(math.nan)))

        outputs: list[tuple[int, int]] = []
        if self._outputs is not None:
            completed = req[kinds == COMPLETE]
            tokens = self._outputs[completed]
            known = tokens >= 0
            outputs = list(zip(completed[known].tolist(), tokens[known].tolist()))
        value = columns.get(self._value if self._value in columns else "meter", nan)
        batch = EventBatch(
            start=self._events,
            kind=_typed("b", kinds),
            user=_typed("i", users),
            new_users=[self._names[u] for u in new_users],
            new_user_weights=[self._weights.get(self._names[u], 1.0) for u in new_users],
            req=_typed("i", req.astype(np.int32)),
            requests=len(self.requests),
            names=self.requests,
            t=_typed("d", columns["t"]),
            v=_typed("d", columns.get("v", nan)),
            value=_typed("d", value),
            first_dispatch=self._dispatches,
            cost=_typed("d", columns["cost"][is_dispatch]),
            est_output=priced(None if pricing is None else pricing.est_output),
            ratio=priced(None if pricing is None else pricing.ratio),
            dispatch_events=_typed("q", positions[is_dispatch]),
            arrive_events=_typed("q", positions[kinds == ARRIVE]),
            finish_events=_typed("q", positions[(kinds == COMPLETE) | (kinds == CANCEL)]),
            idle_events=_typed("q", positions[kinds == IDLE_RESET]),
            outputs=outputs,
            replica=_typed("i", columns["replica"]) if "replica" in columns else None,
            cached=_cached(cached, self._cached, kinds, req, positions),
            placed=_placed(columns, kinds, req, positions, self._upstreams, self._predicted),
        )
        self._events += n
        self._dispatches += len(dispatched)
        return batch

    def _users(self, codes: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """Each row's table code of its user (-1: none), and the trace codes of the users
        seen for the first time, in order of appearance (they get the next table codes)."""
        named = codes >= 0
        unseen = named.copy()
        unseen[named] = self._code[codes[named]] < 0
        new: list[int] = []
        if unseen.any():
            found, first = np.unique(codes[unseen], return_index=True)
            new = found[np.argsort(first)].tolist()
            self._code[new] = np.arange(self._seen, self._seen + len(new), dtype=np.int32)
            self._seen += len(new)
        table_codes = np.full(len(codes), -1, dtype=np.int32)
        table_codes[named] = self._code[codes[named]]
        return table_codes, new


def replay_batches(replay: Replay, loaded: LoadedTrace, value_column: str, chunk: int) -> Iterator[tuple[EventBatch, float]]:
    """Replay to the end, a batch every ``chunk`` events, each with the fraction of requests arrived."""
    batcher = ReplayBatcher(loaded, value_column, replay.plan.upstream_names, replay.plan.upstreams_recorded)
    total = max(1, len(loaded.trace))
    for drained in replay.drained(chunk=chunk):
        if len(drained.rows):  # rows name requests by trace index: no request chunk is needed
            yield batcher.convert(drained.rows, drained.pricing, drained.cached), drained.arrived / total
