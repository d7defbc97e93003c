"""A trace's requests as the engine served them, for fitting the engine model (core/analysis/engine_fit).

Each request needs its prompt and output tokens, when it was sent to the engine and how
long it took there (``service_s``). A proxy's recording (``sfqtui proxy --record``) keeps
the time each request arrived at the proxy; when the proxy sent it is what a replay of
the recording says, since the recording replays to the proxy's own dispatches (docs/proxy.md),
with its slots, or under ``--slots auto`` the capacity it recorded as it changed (docs/semantics.md
§13): never a slot count that never was. A gateway's log (``sfqtui import litellm|otel|envoy-ai-gateway``) starts each
row when the gateway called the engine, so there a request was sent when it arrived.
``ttft_s``, where the log has it, is counted from the same instant. ``cached_tokens``, where
a recording has it (the engine's usage said what its prefix cache held, docs/proxy.md), is
left out of the request's prefill: the engine computed only the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sfqtui.core.analysis.engine_fit.lived import Served
from sfqtui.core.events import DISPATCH
from sfqtui.core.numbers import count, counted, percent
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError
from sfqtui.trace.load import load_trace, read_parquet

RECORDED_BY_PROXY = "sfqtui proxy"


@dataclass(frozen=True)
class ServedTrace:
    served: list[Served]
    index: list[int]  # each served request's index in the trace
    trace: Trace
    slots: int | None  # the proxy's slots when it recorded (None: a gateway's log, which held nothing back, or --slots auto)
    dispatched: str  # how the dispatch times were found, for the report
    left_out: str | None  # the requests left out and why, or None
    cached: str | None = None  # what the prefix cache held, for the report; None: the trace does not say
    capacity: RecordedLimits | None = None  # --slots auto: the limits the proxy recorded (the slots followed them)


def served_requests(path: Path) -> ServedTrace:
    """The requests of the trace at ``path`` that have measured times and tokens; InputError for a trace without them."""
    loaded = load_trace(path)
    trace = loaded.trace
    if trace.service_s is None:
        raise InputError(f"{path}: no service_s column: fitting needs each request's measured time "
                         "(record through `sfqtui proxy --record`, or import a gateway's log)")
    for column in ("input_tokens", "output_tokens"):
        if getattr(trace, column) is None:
            raise InputError(f"{path}: no {column} column: fitting needs each request's prompt and output tokens")
    assert trace.input_tokens is not None and trace.output_tokens is not None
    slots, capacity = None, loaded.recorded_limits
    if loaded.metadata.get("source") == RECORDED_BY_PROXY and capacity is not None:
        if len(capacity.upstreams) > 1:
            raise InputError(f"{path}: a recording whose slots followed {len(capacity.upstreams)} upstreams (--slots auto): "
                             "the engine model is one engine, and a fit to them all would mix their requests; record one upstream")
        dispatch = _dispatch_times(loaded.trace, ReplayConfig(slots=capacity.first, capacity=capacity))
        least, most = min(capacity.totals()), max(capacity.totals())
        dispatched = (f"sent when a replay of the recording on its recorded capacity ({capacity.slots}: {count(least)} to "
                      f"{counted(most, 'slot')}) dispatches them")
    elif loaded.metadata.get("source") == RECORDED_BY_PROXY:
        slots = loaded.suggested_slots
        if slots is None:
            raise InputError(f"{path}: a proxy's recording with neither a fixed slot count nor a recorded capacity in its "
                             "metadata: when each request was sent cannot be rebuilt")
        dispatch = _dispatch_times(loaded.trace, ReplayConfig(slots=slots))
        dispatched = f"sent when a replay of the recording with its {counted(slots, 'slot')} dispatches them"
    else:
        dispatch = list(trace.arrival_s)
        dispatched = "sent when they arrived (a gateway's log starts each call when it calls the engine)"
    ttft, cached = _by_request(path, "ttft_s", pl.Float64), _by_request(path, "cached_tokens", pl.Int64)
    served, index = [], []
    for i, arrival in enumerate(trace.arrival_s):
        prompt, output = trace.input_tokens[i], trace.output_tokens[i]
        if prompt >= 0 and output >= 1:  # -1: null; no output: nothing the engine decoded
            rid = trace.request_id[i]
            held = min(prompt, max(0, int(cached.get(rid, 0))))
            served.append(Served(arrival, dispatch[i], trace.service_s[i], prompt, output, ttft.get(rid), held))
            index.append(i)
    missing = len(trace) - len(served)
    left_out = None if not missing else f"{counted(missing, 'request')} without input or output tokens left out"
    if not served:
        raise InputError(f"{path}: no request has both input and output tokens ({count(len(trace))} rows)")
    return ServedTrace(served, index, trace, slots, dispatched, left_out, _cached_said(served, len(cached)), capacity)


def _cached_said(served: list[Served], said: int) -> str | None:
    if not said:
        return None
    held = sum(r.cached_tokens for r in served)
    prompts = sum(r.input_tokens for r in served)
    return (f"prefill counts uncached tokens only: {counted(said, 'request')} said what the prefix cache held, "
            f"{count(held)} of {count(prompts)} prompt tokens ({percent(held / prompts if prompts else 0.0)})")


def _dispatch_times(trace: Trace, config: ReplayConfig) -> list[float]:
    events = Replay(trace, config).run_all()
    dispatch = [0.0] * len(trace)
    for t, kind, req in zip(events.t, events.kind, events.req):
        if kind == DISPATCH:
            dispatch[req] = t
    return dispatch


def _by_request(path: Path, column: str, dtype: type[pl.DataType]) -> dict[str, float]:
    """Each request's value of an optional column (time to first token, cached tokens), where the trace has one."""
    frame = read_parquet(path)
    if column not in frame.columns:
        return {}
    known = frame.select(pl.col("request_id").cast(pl.String), pl.col(column).cast(dtype)).drop_nulls()
    return dict(zip(known["request_id"].to_list(), known[column].to_list()))
