"""Fairness at engine start in a slot run through `sfqtui proxy --record`, from what the engine and the client saw.

Each request carries a tag of its own in the class header (x-sfqtui-class: SFQ does not read
it, the recording keeps it), so that each recorded request is matched with what its client
saw of it. A request's start is, by the first of these that the run has:

- the engine's own report: `sfqtui engine`'s header, which the recording keeps as
  `engine_start_s` (docs/engine.md);
- vLLM's per-request metrics (`--enable-per-request-metrics`): its time from scheduling the
  request to its first token (`time_to_first_token_ms`, on the answer's last chunk), taken
  back from the first token as the client saw it; that first byte also carries the API
  server's time to stream it out, so the start is as late as that;
- the first token as the client saw it, one prefill step (and that streaming) after the start.

On the proxy's clock, a request starts as long after its arrival there as it did after its
client sent it. A request cut at the end of the run has no last chunk, so no vLLM report:
its first token stands in. Figures at the first tokens are given too, to show what that
stand-in changes.

The recording is replayed on what it recorded (its slots, or under --slots auto the limits
it recorded as they changed: the live dispatch sequence, docs/semantics.md §13) for its
arrivals, dispatches, charges and completions, the starts are added as `start` rows, and the
fairness tally of `sfqtui compare` measures the worst gap among users who were waiting, at
dispatch and at engine start (docs/semantics.md, "Fairness at engine start").

It also bounds light's share by its own demand: each of light's closed loops starts a request
no faster than one per its time in the engine and in the API server around it, however short
its waits in the proxy and in the engine's queue.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from vllm_load import Done

from sfqtui.core.analysis.fairness import FairnessReport, fairness
from sfqtui.core.events import KINDS, EventColumns
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.trace.load import load_trace, read_parquet

FIRST_TOKEN = "first token"
ENGINE_REPORTED = "the engine's own (x-sfqtui-engine-start)"
VLLM_REPORTED = "vLLM's per-request metrics: the first token less time_to_first_token_ms (from scheduling)"
# A request's start on the proxy's clock from its id, tag, arrival there and completion (None: not replayed); None: it has none.
Starts = Callable[[str, str | None, float, float | None], float | None]


def engine_starts(recording: Path) -> dict[str, float]:
    """Each request's start as its engine reported it (request id -> time on the recording's clock); empty when none did."""
    frame = read_parquet(recording)
    if "engine_start_s" not in frame.columns:
        return {}
    known = frame.select(pl.col("request_id").cast(pl.String), "engine_start_s").drop_nulls()
    return dict(zip(known["request_id"].to_list(), known["engine_start_s"].to_list()))


def client_starts(first_tokens: dict[str, tuple[float, float]], engine_ttft: dict[str, float], ends: dict[str, float]) -> Starts:
    """Starts from the client's times: each tag's first token (``first_tokens``: tag -> (sent, first token)), less the
    engine's time from the start to it where ``engine_ttft`` has one; as long before the proxy's completion as before the
    client's end (``ends``) for an answered request, else as long after the proxy's arrival as after the sending.

    The end is the anchor where there is one: the proxy forwards the last chunk as it completes the request, while a
    busy proxy publishes a request's arrival well after the client sent it (0.5 s and more under 20 streams)."""
    def start(_rid: str, tag: str | None, arrival: float, completion: float | None) -> float | None:
        if tag not in first_tokens:
            return None
        sent, first = first_tokens[tag]
        began = first - engine_ttft.get(tag, 0.0)
        if tag in ends and completion is not None:
            return completion - (ends[tag] - began)
        return arrival + began - sent
    return start


@dataclass(frozen=True)
class Started:
    count: int  # requests with a start
    # starts moved to their dispatch, or to just before their completion, where the clocks disagreed (the client's time to
    # its start put it outside the proxy's dispatch to completion)
    to_dispatch: int
    to_completion: int


def replayed(recording: Path) -> tuple[Trace, EventColumns, str]:
    """The recording's requests and its replay on what it recorded (its slots, or its limits as they changed), and the scheduler."""
    loaded = load_trace(recording)
    trace, capacity = loaded.trace, loaded.recorded_limits
    config = ReplayConfig(slots=capacity.first, capacity=capacity) if capacity is not None else ReplayConfig(slots=loaded.suggested_slots or 1)
    return trace, Replay(trace, config).run_all(), config.scheduler


def recorded_log(recording: Path, starts: Starts) -> tuple[LogRows, Started]:
    """The recording's replayed log with a ``start`` row at each request's start, within its dispatch to its completion."""
    trace, events, scheduler = replayed(recording)
    replayed_rows = rows_from_replay(events, trace, scheduler)
    dispatched = {rid: t for t, kind, rid in zip(replayed_rows.t, replayed_rows.kind, replayed_rows.request_id) if kind == "dispatch"}
    completed = {rid: t for t, kind, rid in zip(replayed_rows.t, replayed_rows.kind, replayed_rows.request_id) if kind in ("complete", "cancel")}
    tags = trace.policy_class or [None] * len(trace)
    started: list[tuple[float, int]] = []
    early = late = 0
    for k, tag in enumerate(tags):
        if k in dispatched and (t := starts(trace.request_id[k], tag, trace.arrival_s[k], completed.get(k))) is not None:
            early += t < dispatched[k]
            t = max(dispatched[k], t)
            if k in completed and t >= completed[k]:
                late += 1
                t = max(dispatched[k], completed[k] - 1e-6)
            started.append((t, k))
    rows = [(t, 0, n) for n, t in enumerate(replayed_rows.t)] + [(t, 1, k) for t, k in started]  # a start after the events of its instant
    rows.sort(key=lambda row: row[:2])
    users = trace.users
    merged: dict[str, list[Any]] = {"t": [], "kind": [], "user": [], "request_id": [], "cost": []}
    for t, is_start, n in rows:
        values: tuple[float, str, str | None, Hashable | None, float | None]
        if is_start:
            values = (t, "start", users[trace.user[n]], n, None)
        else:
            values = (t, replayed_rows.kind[n], replayed_rows.user[n], replayed_rows.request_id[n], replayed_rows.cost[n])
        for column, value in zip(merged, values, strict=True):
            merged[column].append(value)
    nothing = [None] * len(rows)
    return LogRows(scheduler, range(len(rows)), merged["t"], merged["kind"], merged["user"], merged["request_id"], merged["cost"],
                   nothing, nothing, nothing), Started(len(started), early, late)


def _gap(report: FairnessReport | None, c_max: float) -> dict[str, Any] | None:
    if report is None or report.worst_gap is None:
        return None
    gap = report.worst_gap
    return {"gap": gap.gap, "c_max": gap.gap / c_max if c_max else None, "ahead": gap.ahead, "behind": gap.behind,
            "start_t": gap.start_t, "end_t": gap.end_t, "exact": report.gap_exact}


def _figures(log: LogRows, started: Started) -> dict[str, Any]:
    costs = [c for c, kind in zip(log.cost, log.kind) if kind == "dispatch" and c is not None]
    c_max = max(costs, default=0.0)
    report = fairness(log, at_engine_start=True)
    at_start = report.at_engine_start
    return {"recorded_requests": sum(kind == "dispatch" for kind in log.kind), "starts": started.count,
            "starts_moved_to_dispatch": started.to_dispatch, "starts_moved_before_completion": started.to_completion,
            "c_max": c_max, "worst_gap_at_dispatch": _gap(report, c_max), "worst_gap_at_engine_start": _gap(at_start, c_max),
            "starts_out_of_dispatch_order": None if report.out_of_dispatch_order is None else report.out_of_dispatch_order.as_dict(),
            "jain_at_engine_start": None if at_start is None else at_start.jain}


def start_fairness(recording: Path, first_tokens: dict[str, tuple[float, float]], engine_ttft: dict[str, float],
                   ends: dict[str, float]) -> dict[str, Any]:
    """The worst gap among users who were waiting, at dispatch and at engine start, in charge and in c_max, at the starts
    as near the engine as the run has them (module doc), and at the first tokens under ``at_first_token`` when those are not it."""
    at_first_token = {"start_measure": FIRST_TOKEN, **_figures(*recorded_log(recording, client_starts(first_tokens, {}, ends)))}
    if reported := engine_starts(recording):
        measure, starts = ENGINE_REPORTED, lambda rid, _tag, _arrival, _completion: reported.get(rid)
    elif engine_ttft:
        measure, starts = VLLM_REPORTED, client_starts(first_tokens, engine_ttft, ends)
    else:
        return at_first_token
    return {"start_measure": measure, "starts_reported": len(reported or engine_ttft), **_figures(*recorded_log(recording, starts)),
            "at_first_token": at_first_token}


def proxy_waits(recording: Path) -> dict[str, float]:
    """Each tagged request's wait in the proxy (arrival to dispatch), as the recording replays."""
    trace, events, _ = replayed(recording)
    tags = trace.policy_class or [None] * len(trace)
    return {tag: t - trace.arrival_s[k] for t, kind, k in zip(events.t, events.kind, events.req)
            if KINDS[kind] == "dispatch" and (tag := tags[k]) is not None}


def demand_bound(done: list[Done], waits: dict[str, float], loops: dict[str, int], light: str, duration_s: float, started: int) -> dict[str, Any]:
    """Light's share of the starts if it never waited in a queue, and where its time went.

    Each of light's loops starts a request at most once per its time in the engine (vLLM's scheduling to last token, or
    the first token to the last where it did not say) and outside it (the API server's time before and after, the wire,
    the proxy's forwarding: its time from sending to answer less its waits in the proxy and in the engine's queue and its
    time in the engine), against all the starts the engine made per second. ``waits``: proxy_waits'.
    """
    mine = [d for d in done if d.user == light and d.tag in waits]
    rate = started / duration_s
    if not mine or not started:
        return {"light_share_bound": None}
    in_engine = [d.engine_ttft + d.engine_generation if d.engine_ttft is not None and d.engine_generation is not None else d.end - d.first
                 for d in mine]
    queue = [d.engine_queue or 0.0 for d in mine]
    cycle = [d.end - d.sent for d in mine]
    proxy = [waits[d.tag] for d in mine]
    outside = [c - p - q - e for c, p, q, e in zip(cycle, proxy, queue, in_engine)]
    engine_only = loops[light] / statistics.fmean(in_engine)
    unqueued = loops[light] / (statistics.fmean(in_engine) + statistics.fmean(outside))
    return {"light_answered": len(mine), "light_cycle_mean_s": statistics.fmean(cycle), "light_proxy_wait_mean_s": statistics.fmean(proxy),
            "light_engine_queue_mean_s": statistics.fmean(queue), "light_in_engine_mean_s": statistics.fmean(in_engine),
            "light_outside_mean_s": statistics.fmean(outside), "engine_start_rate": rate,
            "light_share_bound_engine_only": min(1.0, engine_only / rate), "light_share_bound": min(1.0, unqueued / rate)}
