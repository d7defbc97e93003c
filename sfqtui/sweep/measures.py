"""What a sweep measures on each run: a function of (trace, config) returning the row's figures.

Measures run on Dask workers, so they are module-level functions (pickled by name).
"""

from __future__ import annotations

from collections.abc import Callable

from sfqtui.core.analysis.calibration import worst_gap_in_actual_cost
from sfqtui.core.analysis.fairness import fairness_of_replay
from sfqtui.core.analysis.replication_cost import replica_measures, tally_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.requests.trace import Trace

Measure = Callable[[Trace, ReplayConfig], dict[str, object]]


def fairness_figures(trace: Trace, config: ReplayConfig) -> dict[str, object]:
    """What `sfqtui compare` prints for one scheduler, flattened into one row, with the
    measures of semantics §11: a replicated run's against one scheduler with the same slots;
    one scheduler's own worst gap in c_max (it is its own reference: no drift, nothing stranded)."""
    if config.replicas.replicated:
        report, measures = replica_measures(trace, config)
        replicas = measures.as_dict()
    else:
        tally, report = tally_replay(trace, config)
        c_max = tally.c_max
        gap_cmax = report.worst_gap.gap / c_max if report.worst_gap is not None and c_max else None
        replicas = {"worst_gap_cmax": gap_cmax, "drift_cmax": 0.0, "stranded": 0.0, "makespan_ratio": 1.0}
    users = report.as_dict()["users"]
    assert isinstance(users, dict)
    gap = report.worst_gap
    return _on_engines(trace, config) | {
        "requests": len(trace),
        "jain": report.jain,
        "worst_gap": None if gap is None else gap.gap,
        "worst_gap_ahead": None if gap is None else gap.ahead,
        "worst_gap_behind": None if gap is None else gap.behind,
        "worst_gap_start_t": None if gap is None else gap.start_t,
        "worst_gap_end_t": None if gap is None else gap.end_t,
        "worst_gap_exact": report.gap_exact,
        "congested_dispatches": report.congested_dispatches,
        "users": [{"user": user, **values} for user, values in users.items()],
        **{key: replicas[key] for key in ("worst_gap_cmax", "drift_cmax", "stranded", "makespan_ratio")},
    }


def _on_engines(trace: Trace, config: ReplayConfig) -> dict[str, object]:
    """On the engine model: the worst gap at engine start and, on a trace with blocks, the prefix
    cache's figures (what `compare` prints for them), from a replay of its own."""
    if config.engine is None or config.replicas.replicated:
        return {}
    report = fairness_of_replay(trace, config)
    started = report.at_engine_start
    start_gap = None if started is None or started.worst_gap is None else started.worst_gap.gap
    prefix = report.prefix
    if prefix is None:
        return {"worst_gap_at_start": start_gap}
    users = prefix.as_dict()["users"]
    assert isinstance(users, dict)
    return {"worst_gap_at_start": start_gap, "prefix_hit_rate": prefix.hit_rate, "prefill_saved_tokens": prefix.cached_tokens,
            "idle_while_queued_s": prefix.idle_while_queued_s, "ttft": [{"user": user, **values} for user, values in users.items()]}


def actual_gap_figures(trace: Trace, config: ReplayConfig) -> dict[str, object]:
    """The worst gap between continuously backlogged users in actual cost (semantics §10)."""
    return {"worst_gap_actual": worst_gap_in_actual_cost(trace, config).as_dict()}
