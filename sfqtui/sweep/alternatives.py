"""What `sfqtui calibrate` compares an estimator with: the oracle, vtc, and every other
ratio scope and update rule, each replayed through the sweep to find its worst gap in
actual cost; and the suggestion that follows.

Calibration traces are usually small, where starting a cluster (about a second, plus
sending the trace) costs more than the runs: up to ``IN_PROCESS_LIMIT`` requests replayed
in all, the runs go one after another in this process; above it, on a LocalCluster of one
worker per CPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from sfqtui.core.numbers import counted
from sfqtui.core.pricing.estimator import SCOPES, UPDATES
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.requests.trace import Trace
from sfqtui.sweep.measures import actual_gap_figures
from sfqtui.sweep.plan import RunSettings
from sfqtui.sweep.runs import Progress, Row, run_in_process

IN_PROCESS_LIMIT = 200_000
MIN_CUT = 0.05  # suggest another rule only when it cuts the gap by at least this fraction: smaller cuts are noise


def reference_runs(name: str, config: ReplayConfig) -> dict[str, RunSettings]:
    """The oracle under the same scheduler (unless ``config`` is the oracle), and vtc
    (which charges actual output after the fact)."""
    runs = {"vtc": RunSettings(name, "vtc", config.slots, config.estimator, config.service)}
    if not config.estimator.oracle:
        runs["oracle"] = RunSettings(name, config.scheduler, config.slots, replace(config.estimator, oracle=True), config.service)
    return dict(sorted(runs.items()))


def ratio_alternatives(name: str, trace: Trace, config: ReplayConfig) -> list[RunSettings]:
    """Every other (scope, update) of the ratio estimator; the model scope only when the trace names models."""
    current = config.estimator
    scopes = [s for s in SCOPES if s != "model" or trace.model is not None]
    return [
        RunSettings(name, config.scheduler, config.slots, replace(current, scope=scope, update=update), config.service)
        for scope in scopes
        for update in UPDATES
        if (scope, update) != (current.scope, current.update)
    ]


def run_alternatives(runs: Sequence[RunSettings], trace: Trace, progress: Progress | None = None) -> tuple[list[Row], str]:
    """Each run's worst gap in actual cost, and where they ran (in words)."""
    traces = {run.trace: trace for run in runs}
    if len(trace) * len(runs) <= IN_PROCESS_LIMIT:
        return run_in_process(runs, traces, actual_gap_figures, progress), "in this process"
    from sfqtui.sweep.cluster import dask_client, run_on_dask  # see its docstring: imported only when needed

    workers = min(os.cpu_count() or 1, len(runs))
    with dask_client(workers=workers) as client:
        return run_on_dask(client, runs, traces, actual_gap_figures, progress), f"on a local Dask cluster of {counted(workers, 'worker')}"


def actual_gap(row: Row) -> float | None:
    gap = row.get("worst_gap_actual")
    return gap["gap"] if isinstance(gap, dict) else None


def suggestion(current: float | None, alternatives: Sequence[Row]) -> Row | None:
    """The alternative with the smallest worst gap in actual cost, when it cuts ``current`` by MIN_CUT or more."""
    measured = [(gap, row) for row in alternatives if (gap := actual_gap(row)) is not None]
    if current is None or not measured:
        return None
    gap, best = min(measured, key=lambda measure: measure[0])
    return best if gap <= current * (1 - MIN_CUT) else None
