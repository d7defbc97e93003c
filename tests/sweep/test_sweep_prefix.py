"""A sweep on the engine model: one run per placement, each row with the worst gap at engine
start and, on a trace with blocks, the prefix cache's figures as `compare` gives them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sfqtui.core.analysis.fairness import fairness_of_replay
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.errors import InputError
from sfqtui.sweep.measures import fairness_figures
from sfqtui.sweep.plan import plan_runs
from sfqtui.sweep.results import complete_rows
from sfqtui.sweep.runs import run_in_process
from sfqtui.trace.load import load_trace

TRACE = Path(__file__).resolve().parents[2] / "traces" / "multi-turn.parquet"


def test_each_placement_is_a_run_with_the_figures_compare_gives() -> None:
    trace = load_trace(TRACE).trace
    runs = plan_runs({str(TRACE): 8}, ["sfq"], engine=EngineSettings(EngineModel(), 2), placements=["room", "prefix"])
    assert [(run.engine.placement if run.engine else None, run.slots) for run in runs] == [("room", 12), ("prefix", 12)]
    rows = complete_rows(run_in_process(runs, {str(TRACE): trace}, fairness_figures))
    for run, row in zip(runs, rows, strict=True):
        assert row["error"] is None and row["placement"] == run.engine.placement and row["engines"] == 2  # type: ignore[union-attr]  # planned with an engine
        report = fairness_of_replay(trace, run.config())
        assert report.prefix is not None and row["prefix_hit_rate"] == report.prefix.hit_rate
        assert report.at_engine_start is not None and report.at_engine_start.worst_gap is not None
        assert row["worst_gap_at_start"] == report.at_engine_start.worst_gap.gap
        ttft = row["ttft"]
        assert isinstance(ttft, list) and [u["user"] for u in ttft] == sorted(report.prefix.ttft)
    assert rows[1]["prefix_hit_rate"] > rows[0]["prefix_hit_rate"]  # type: ignore[operator]  # both measured


def test_a_placement_without_engines_is_refused() -> None:
    with pytest.raises(InputError, match="--placement places requests among engines: give --engines N"):
        plan_runs({str(TRACE): 8}, ["sfq"], placements=["prefix"])
