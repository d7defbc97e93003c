"""The traces in traces/ and the demo trace in the package are exactly what `sfqtui gen` makes today."""

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import sfqtui
from sfqtui.cli.app import app
from sfqtui.runs.opening import Opening
from sfqtui.scenarios import DEMO_TRACE, SCENARIOS, generate

TRACES = Path(__file__).resolve().parents[2] / "traces"


@pytest.mark.parametrize("scenario", sorted(set(SCENARIOS) - {"production"}))
def test_bundled_trace_is_current(scenario: str) -> None:
    assert pl.read_parquet(TRACES / f"{scenario}.parquet").equals(generate(scenario, seed=0))


def test_bundled_production_trace_is_current() -> None:
    assert pl.read_parquet(TRACES / "production-20k.parquet").equals(generate("production", seed=0, users=200, requests=20000))


def test_the_packaged_demo_trace_is_the_bundled_one() -> None:
    """`sfqtui demo` opens the copy inside the package (an install has no traces/ folder)."""
    assert DEMO_TRACE.read_bytes() == (TRACES / "demo.parquet").read_bytes()


def test_replay_without_a_trace_opens_the_packaged_demo(cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[list[Opening]] = []
    monkeypatch.setattr("sfqtui.ui.app.run_dashboard", lambda openings, **_kwargs: opened.append(openings))
    assert cli.invoke(app, ["replay"]).exit_code == 0
    assert [opening.path for opening in opened[0]] == [DEMO_TRACE] and DEMO_TRACE.is_relative_to(Path(sfqtui.__file__).parent)
