"""The traces in traces/ are exactly what `sfqtui gen` makes today."""

from pathlib import Path

import polars as pl
import pytest

from sfqtui.scenarios import SCENARIOS, generate

TRACES = Path(__file__).resolve().parents[1] / "traces"


@pytest.mark.parametrize("scenario", sorted(set(SCENARIOS) - {"production"}))
def test_bundled_trace_is_current(scenario: str) -> None:
    assert pl.read_parquet(TRACES / f"{scenario}.parquet").equals(generate(scenario, seed=0))


def test_bundled_production_trace_is_current() -> None:
    assert pl.read_parquet(TRACES / "production-20k.parquet").equals(generate("production", seed=0, users=200, requests=20000))
