"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace


def trace_of(rows: list[tuple[str, float, float]], service: float | list[float] = 1.0, weights: dict[str, float] | None = None) -> Trace:
    """A trace from (user, arrival_s, cost) rows, already in arrival order."""
    rows = sorted(rows, key=lambda r: r[1])
    n = len(rows)
    services = service if isinstance(service, list) else [service] * n
    return Trace(
        request_id=[f"q{k:05d}" for k in range(n)],
        user=[r[0] for r in rows],
        arrival_s=[float(r[1]) for r in rows],
        cost=[float(r[2]) for r in rows],
        service_s=services,
        weights=weights or {},
    )


def replay(trace: Trace, scheduler: str = "sfq", slots: int = 1, **options: Any) -> LogRows:
    run = Replay(trace, ReplayConfig(scheduler=scheduler, slots=slots, **options))
    return rows_from_replay(run.run_all(), trace, scheduler)


def dispatches(log: LogRows) -> list[tuple[str | None, float | None, float | None, float | None]]:
    """(user, cost, v, meter) for every dispatch, in order."""
    return [
        (log.user[k], log.cost[k], log.v[k], log.meter[k])
        for k in range(len(log))
        if log.kind[k] == "dispatch"
    ]
