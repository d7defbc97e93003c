"""Synthetic traces that each show one property of the article (`sfqtui gen`)."""

from pathlib import Path

from sfqtui.scenarios.catalogue import SCENARIOS, Scenario, generate

# `sfqtui gen demo` (seed 0), shipped inside the package so that `sfqtui demo` and a bare
# `sfqtui replay` work from any install; tests/scenarios/test_bundled_traces.py keeps it current.
DEMO_TRACE = Path(__file__).with_name("demo.parquet")

__all__ = ["DEMO_TRACE", "SCENARIOS", "Scenario", "generate"]
