"""Slot defaults that do not mislead: imports suggest a slot count from the trace's load, and
a trace that replays on one slot only because nothing said otherwise gets a note."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.pricing.service import TokenServiceModel, service_times
from sfqtui.trace.load import load_trace
from sfqtui.trace.offered_load import HEADROOM, one_slot, service_seconds
from sfqtui.trace.write import read_metadata

REAL = Path(__file__).resolve().parents[2] / "traces" / "real"  # the public samples kept in the repository (traces/real/README.md)
AZURE = REAL / "azure_llm_2023"
N = 400


def busy_trace(path: Path) -> Path:
    """400 requests over 200 s, each holding a slot about 7 s: about 14 slots busy on average."""
    pl.DataFrame({
        "request_id": [f"r{k}" for k in range(N)],
        "user": [f"u{k % 4}" for k in range(N)],
        "arrival_s": [k * 0.5 for k in range(N)],
        "input_tokens": [1000 + k for k in range(N)],
        "output_tokens": [250 + k % 50 for k in range(N)],
    }).write_parquet(path)
    return path


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    monkeypatch.setattr("sfqtui.ui.app.run_dashboard", lambda openings, **_kwargs: calls.append(openings))
    return calls


@pytest.fixture(scope="module")
def azure_import(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The two Azure 2023 samples imported as one trace (read, never changed, by the tests that take it); and what import said."""
    out = tmp_path_factory.mktemp("azure") / "azure.parquet"
    result = CliRunner().invoke(app, ["import", "azure", str(AZURE / "AzureLLMInferenceTrace_code.csv"),
                                      str(AZURE / "AzureLLMInferenceTrace_conv.csv"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.stdout


AZURE_IMPORT = pytest.mark.xdist_group("test_slot_defaults_azure")  # the tests that share azure_import, on one worker


@AZURE_IMPORT
def test_the_azure_import_suggests_slots_from_its_load(azure_import: tuple[Path, str], tmp_path: Path, cli: CliRunner) -> None:
    out, said = azure_import
    meta = read_metadata(out)
    # 119,879 s of service over 3,513 s of arrivals: 34.1 slots busy on average, 43 with 25% headroom
    assert meta["offered_load"] == pytest.approx(34.12, abs=0.01) and meta["slots"] == 43
    assert "replays use 43 slots unless --slots is given: the trace keeps 34.1 slots busy on average" in said
    simulated = cli.invoke(app, ["simulate", str(out), "-o", str(tmp_path / "log.parquet")])
    assert "43 slots" in simulated.stdout and "note:" not in simulated.stderr


@AZURE_IMPORT
def test_the_azure_trace_without_a_suggestion_says_it_replays_on_one_slot(azure_import: tuple[Path, str], tmp_path: Path, cli: CliRunner) -> None:
    imported, _ = azure_import
    plain = tmp_path / "plain.parquet"
    pl.read_parquet(imported).write_parquet(plain)  # what a trace from elsewhere looks like: no metadata
    result = cli.invoke(app, ["simulate", str(plain), "-o", str(tmp_path / "log.parquet")])
    assert result.exit_code == 0
    assert result.stderr.strip() == (
        "note: plain.parquet suggests no slot count and --slots is not given, so it replays on 1 slot: its last request "
        "completes at t = 33.3 h, after 58.6 min of arrivals; --slots 43 keeps up with its load (docs/traces.md)")
    assert float(pl.read_parquet(tmp_path / "log.parquet")["t"].max()) / 3600 == pytest.approx(33.3, abs=0.05)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["simulate", "compare", "replay", "explain", "calibrate"])
def test_every_replaying_command_notes_a_default_of_one_slot(command: str, tmp_path: Path, cli: CliRunner, opened: list[object]) -> None:
    trace = busy_trace(tmp_path / "busy.parquet")
    extra = {"simulate": ["-o", str(tmp_path / "log.parquet")], "compare": ["--schedulers", "sfq"], "explain": ["r0"]}.get(command, [])
    result = cli.invoke(app, [command, str(trace), *extra])
    assert result.exit_code == 0, result.output
    assert "note: busy.parquet suggests no slot count and --slots is not given, so it replays on 1 slot" in result.stderr
    expected = math.ceil(one_slot(trace, TokenServiceModel()).total_service_s / (0.5 * (N - 1)) * HEADROOM)
    assert f"--slots {expected} keeps up" in result.stderr
    given = cli.invoke(app, [command, str(trace), *extra, "--slots", "4"])
    assert given.exit_code == 0 and "note:" not in given.stderr


def test_no_note_where_one_slot_keeps_up(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "light.parquet"
    pl.DataFrame({"request_id": ["a", "b"], "user": ["x", "y"], "arrival_s": [0.0, 100.0], "input_tokens": [10, 10]}).write_parquet(trace)
    result = cli.invoke(app, ["simulate", str(trace), "-o", str(tmp_path / "log.parquet")])
    assert result.exit_code == 0 and "note:" not in result.stderr


def test_the_one_slot_makespan_is_the_replays(tmp_path: Path, cli: CliRunner) -> None:
    trace = busy_trace(tmp_path / "busy.parquet")
    for scheduler in ("sfq", "fifo", "drr"):
        log = tmp_path / f"{scheduler}.parquet"
        assert cli.invoke(app, ["simulate", str(trace), "-o", str(log), "--scheduler", scheduler]).exit_code == 0
        assert one_slot(trace, TokenServiceModel()).makespan_s == pytest.approx(pl.read_parquet(log)["t"].max(), rel=1e-12)


@pytest.mark.parametrize("columns", [
    {"input_tokens": [10, None, 30], "cost": [1.0, 1.0, 1.0], "max_tokens": [None, 64, 128], "output_tokens": [5, None, None]},
    {"input_tokens": [10, 20, 30]},
    {"cost": [1.0, 2.0, 3.0]},
    {"input_tokens": [10, 20, 30], "service_s": [0.5, 1.5, 2.5]},
])
def test_the_service_expression_is_the_replays_service_model(columns: dict[str, list[object]], tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    frame = pl.DataFrame({"request_id": ["a", "b", "c"], "user": ["x", "y", "x"], "arrival_s": [0.0, 1.0, 2.0], **columns})
    frame.write_parquet(path)
    model = TokenServiceModel(overhead_s=0.1, prefill_tps=1000.0, decode_tps=25.0, default_output_tokens=100)
    expected = service_times(load_trace(path).trace, model)
    assert frame.select(service_seconds(model, frame.columns)).to_series().to_list() == pytest.approx(expected, rel=1e-15)


def test_gen_with_cost_uses_the_service_model(tmp_path: Path, cli: CliRunner) -> None:
    out = tmp_path / "t.parquet"
    assert cli.invoke(app, ["gen", "production", "--requests", "500", "--with-cost", "-o", str(out)]).exit_code == 0
    without = tmp_path / "without.parquet"
    pl.read_parquet(out).drop("service_s").write_parquet(without)
    expected = service_times(load_trace(without).trace, TokenServiceModel())
    assert load_trace(out).trace.service_s == pytest.approx(expected, rel=1e-12)


def test_replay_notes_one_slot_before_the_dashboard_opens(tmp_path: Path, cli: CliRunner, opened: list[object]) -> None:
    trace = busy_trace(tmp_path / "busy.parquet")
    result = cli.invoke(app, ["replay", str(trace), "--compare", "drr"])
    assert result.exit_code == 0 and len(opened) == 1
    assert result.stderr.count("note: busy.parquet suggests no slot count") == 1  # one note for the trace, whatever the panes
