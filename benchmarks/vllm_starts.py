"""Fairness at engine start in a slot run, where the engine does not say when it started a request (vLLM).

The slot run goes through `sfqtui proxy --record`, and each request carries a tag of its own
in the class header (x-sfqtui-class: SFQ does not read it, the recording keeps it), so that
each recorded request is matched with what the client saw of it. A request's start is the
engine's own where it reports one (`sfqtui engine`'s header, which the recording keeps as
`engine_start_s`, docs/engine.md); vLLM reports none, so there its first token stands for its
start: the nearest the engine allows, one prefill step after it joined the batch. On the
proxy's clock, a request starts its client's time to first token after it arrived there.
Where the engine reports starts, the figures at its first tokens are given too, to show what
that stand-in changes.

The recording is replayed on what it recorded (its slots, or under --slots auto the limits
it recorded as they changed: the live dispatch sequence, docs/semantics.md §13) for its
arrivals, dispatches, charges and completions, the starts are added as `start` rows, and the
fairness tally of `sfqtui compare` measures the worst gap among users who were waiting, at
dispatch and at engine start (docs/semantics.md, "Fairness at engine start").

It also bounds light's share by its own demand: light's closed loops start a request no faster
than one per its time in the engine (first token to last), each, however short its waits.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import polars as pl

from sfqtui.core.analysis.fairness import FairnessReport, fairness
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.trace.load import load_trace, read_parquet

FIRST_TOKEN, ENGINE_REPORTED = "first token", "the engine's own (x-sfqtui-engine-start)"


def engine_starts(recording: Path) -> dict[str, float]:
    """Each request's start as its engine reported it (request id -> time on the recording's clock); empty when none did."""
    frame = read_parquet(recording)
    if "engine_start_s" not in frame.columns:
        return {}
    known = frame.select(pl.col("request_id").cast(pl.String), "engine_start_s").drop_nulls()
    return dict(zip(known["request_id"].to_list(), known["engine_start_s"].to_list()))


def recorded_log(recording: Path, first_tokens: dict[str, tuple[float, float]], reported: dict[str, float] | None = None) -> tuple[LogRows, int]:
    """The recording's replayed log with a ``start`` row at each request's start, and how many requests have one.

    ``first_tokens``: each request's tag (its recorded class) -> (sent, first token) on the client's clock, the starts
    unless ``reported`` (engine_starts') is given.
    """
    loaded = load_trace(recording)
    trace, capacity = loaded.trace, loaded.recorded_limits
    config = ReplayConfig(slots=capacity.first, capacity=capacity) if capacity is not None else ReplayConfig(slots=loaded.suggested_slots or 1)
    replayed = rows_from_replay(Replay(trace, config).run_all(), trace, config.scheduler)
    dispatched = {rid: t for t, kind, rid in zip(replayed.t, replayed.kind, replayed.request_id) if kind == "dispatch"}
    tags = trace.policy_class or [None] * len(trace)
    starts: list[tuple[float, int]] = []
    for k, tag in enumerate(tags):
        if k not in dispatched:
            continue
        if reported is not None and trace.request_id[k] in reported:
            starts.append((max(dispatched[k], reported[trace.request_id[k]]), k))
        elif reported is None and tag in first_tokens:
            sent, first = first_tokens[tag]
            starts.append((max(dispatched[k], trace.arrival_s[k] + first - sent), k))
    rows = [(t, 0, n) for n, t in enumerate(replayed.t)] + [(t, 1, k) for t, k in starts]  # a start after the events of its instant
    rows.sort(key=lambda row: row[:2])
    users = trace.users
    merged: dict[str, list[Any]] = {"t": [], "kind": [], "user": [], "request_id": [], "cost": []}
    for t, is_start, n in rows:
        values: tuple[float, str, str | None, Hashable | None, float | None]
        if is_start:
            values = (t, "start", users[trace.user[n]], n, None)
        else:
            values = (t, replayed.kind[n], replayed.user[n], replayed.request_id[n], replayed.cost[n])
        for column, value in zip(merged, values, strict=True):
            merged[column].append(value)
    nothing = [None] * len(rows)
    return LogRows(config.scheduler, range(len(rows)), merged["t"], merged["kind"], merged["user"], merged["request_id"], merged["cost"],
                   nothing, nothing, nothing), len(starts)


def _gap(report: FairnessReport | None, c_max: float) -> dict[str, Any] | None:
    if report is None or report.worst_gap is None:
        return None
    gap = report.worst_gap
    return {"gap": gap.gap, "c_max": gap.gap / c_max if c_max else None, "ahead": gap.ahead, "behind": gap.behind,
            "start_t": gap.start_t, "end_t": gap.end_t, "exact": report.gap_exact}


def _figures(log: LogRows, started: int) -> dict[str, Any]:
    costs = [c for c, kind in zip(log.cost, log.kind) if kind == "dispatch" and c is not None]
    c_max = max(costs, default=0.0)
    report = fairness(log, at_engine_start=True)
    at_start = report.at_engine_start
    return {"recorded_requests": sum(kind == "dispatch" for kind in log.kind), "starts": started,
            "c_max": c_max, "worst_gap_at_dispatch": _gap(report, c_max), "worst_gap_at_engine_start": _gap(at_start, c_max),
            "starts_out_of_dispatch_order": None if report.out_of_dispatch_order is None else report.out_of_dispatch_order.as_dict(),
            "jain_at_engine_start": None if at_start is None else at_start.jain}


def start_fairness(recording: Path, first_tokens: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """The worst gap among users who were waiting, at dispatch and at engine start, in charge and in c_max: at the engine's
    own starts where it reported them (and then at the first tokens as well, under ``at_first_token``), else at the first tokens."""
    at_first_token = {"start_measure": FIRST_TOKEN, **_figures(*recorded_log(recording, first_tokens))}
    reported = engine_starts(recording)
    if not reported:
        return at_first_token
    return {"start_measure": ENGINE_REPORTED, **_figures(*recorded_log(recording, first_tokens, reported)), "at_first_token": at_first_token}


def demand_bound(done: list[tuple[str, float, float, float]], loops: dict[str, int], light: str, duration_s: float, started: int) -> dict[str, Any]:
    """Light's share of the starts if it never waited: its loops each start a request at most once per its time in the
    engine (the mean first token to last of its answered requests), against all the starts the engine made per second.

    ``done``: (user, sent, first token, end) of each answered request.
    """
    in_engine = [end - first for user, _, first, end in done if user == light]
    if not in_engine or not started:
        return {"light_in_engine_mean_s": None, "light_rate_max": None, "engine_start_rate": None, "light_share_bound": None}
    mean = statistics.fmean(in_engine)
    cycle = [end - sent for user, sent, _, end in done if user == light]
    rate_max, rate = loops[light] / mean, started / duration_s
    return {"light_in_engine_mean_s": mean, "light_cycle_mean_s": statistics.fmean(cycle), "light_rate_max": rate_max,
            "engine_start_rate": rate, "light_share_bound": min(1.0, rate_max / rate)}
