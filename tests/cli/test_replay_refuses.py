"""The dashboard commands refuse what they could not show before the app opens: one line on
stderr, exit 2, as every other command does, instead of an empty pane and a toast."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "traces" / "demo.parquet"
N = 2000
TOKENS: dict[str, list[Any]] = {
    "request_id": [f"r{k}" for k in range(N)],
    "user": [f"u{k % 3}" for k in range(N)],
    "arrival_s": [k * 0.5 for k in range(N)],
    "input_tokens": [100 + k % 7 for k in range(N)],
    "max_tokens": [64] * N,
}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The openings the dashboard was started with (it is not started for real)."""
    calls: list[object] = []
    monkeypatch.setattr("sfqtui.ui.app.run_dashboard", lambda openings, **_kwargs: calls.append(openings))
    return calls


def refused(cli: CliRunner, *args: str) -> str:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sfqtui: error: "), result.stderr
    return lines[0]


def corrupt_page(path: Path, column: str) -> None:
    """Overwrite the middle of ``column``'s first data page, as a bad disk or a cut copy would."""
    chunk = next(c for c in (pq.read_metadata(path).row_group(0).column(i) for i in range(pq.read_metadata(path).num_columns))
                 if c.path_in_schema == column)
    with open(path, "r+b") as f:
        f.seek(chunk.data_page_offset + chunk.total_compressed_size // 2)
        f.write(b"\xff" * 32)


def write(path: Path, data: dict[str, list[Any]]) -> Path:
    pl.DataFrame(data).write_parquet(path, compression="zstd", use_pyarrow=True, pyarrow_options={"use_dictionary": False})
    return path


@pytest.fixture
def log(tmp_path: Path, cli: CliRunner) -> Path:
    out = tmp_path / "demo.log.parquet"
    assert cli.invoke(app, ["simulate", str(DEMO), "-o", str(out)]).exit_code == 0
    return out


def test_a_trace_breaking_the_schema_is_refused_before_the_app_opens(tmp_path: Path, cli: CliRunner, opened: list[object]) -> None:
    trace = write(tmp_path / "t.parquet", {**TOKENS, "cost": [1.0] * (N - 1) + [-3.0]})
    assert f"column 'cost', row {N - 1}" in refused(cli, "replay", str(trace))
    assert opened == []


def test_a_corrupt_trace_page_is_refused(tmp_path: Path, cli: CliRunner, opened: list[object]) -> None:
    trace = write(tmp_path / "t.parquet", {**TOKENS, "cost": [float(k % 11 + 1) for k in range(N)]})
    corrupt_page(trace, "cost")
    assert str(trace) in refused(cli, "replay", str(trace))
    assert opened == []


def test_a_corrupt_log_page_is_refused_by_every_command_that_reads_it(log: Path, cli: CliRunner, opened: list[object]) -> None:
    # A dictionary-encoded column: overwritten indices fall outside the dictionary. (Bytes
    # overwritten in a plain page of floats, such as meter's, can decode to other floats
    # without any reader noticing: Parquet pages carry no checksum that readers verify.)
    corrupt_page(log, "user")
    for command in (["replay"], ["check"], ["explain"]):
        args = [*command, str(log)] + (["demo-0"] if command == ["explain"] else [])
        assert "not a readable Parquet file" in refused(cli, *args)
    assert opened == []


def test_a_log_with_an_unknown_kind_or_two_schedulers_is_refused(log: Path, tmp_path: Path, cli: CliRunner, opened: list[object]) -> None:
    rows = pl.read_parquet(log)
    odd = tmp_path / "odd.parquet"
    rows.with_columns(kind=pl.when(pl.col("seq") == 5).then(pl.lit("teleport")).otherwise(pl.col("kind"))).write_parquet(odd)
    assert "row 5 (counting from 0): unknown event kind 'teleport'" in refused(cli, "replay", str(odd))
    rows.with_columns(scheduler=pl.when(pl.col("seq") > 10).then(pl.lit("drr")).otherwise(pl.col("scheduler"))).write_parquet(odd)
    assert "one scheduler's events; this one has drr, sfq" in refused(cli, "replay", str(odd))
    assert opened == []


@pytest.mark.parametrize("args", [["--compare", "vtc"], ["--scheduler", "vtc"], ["--compare", "sfq,vtc"]])
def test_vtc_without_its_columns_is_refused_as_simulate_refuses_it(args: list[str], tmp_path: Path, cli: CliRunner,
                                                                    opened: list[object]) -> None:
    trace = write(tmp_path / "t.parquet", TOKENS)
    line = refused(cli, "replay", str(trace), *args)
    assert "vtc charges actual usage and needs the trace column 'output_tokens'" in line
    assert line == refused(cli, "simulate", str(trace), "-o", str(tmp_path / "l.parquet"), "--scheduler", "vtc")
    assert opened == []


def test_a_good_trace_opens_with_every_compared_run(tmp_path: Path, cli: CliRunner, opened: list[object]) -> None:
    trace = write(tmp_path / "t.parquet", {**TOKENS, "output_tokens": [10] * N})
    result = cli.invoke(app, ["replay", str(trace), "--compare", "vtc,drr", "--slots", "2"])
    assert result.exit_code == 0, result.output
    assert [o.scheduler for o in opened[0]] == ["sfq", "vtc", "drr"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "named"), [
    (["--scheduler", "drr", "--slots", "8"], "--scheduler, --slots apply"),
    (["-n", "8"], "--slots applies"),
    (["--compare", "drr"], "--compare applies"),
    (["--estimator", "oracle", "--overhead", "1"], "--estimator, --overhead apply"),
])
def test_replay_of_a_log_refuses_the_options_that_would_replay_it_otherwise(args: list[str], named: str, log: Path, cli: CliRunner,
                                                                           opened: list[object]) -> None:
    line = refused(cli, "replay", str(log), *args)
    assert f"{log} is an event log, fixed when it was written: {named} to a trace" in line
    assert f"replay the trace it was made from ({DEMO})" in line
    assert opened == []


def test_replay_of_a_log_takes_the_dashboard_options(log: Path, cli: CliRunner, opened: list[object]) -> None:
    result = cli.invoke(app, ["replay", str(log), "--speed", "20", "--play", "--lockstep", "dispatch"])
    assert result.exit_code == 0, result.output
    assert len(opened) == 1


def test_a_lesson_is_checked_before_it_opens(cli: CliRunner, opened: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    from sfqtui.scenarios.lessons import Lesson

    def bad_trace(_lesson: Lesson, path: Path) -> None:
        write(path, {**TOKENS, "cost": [0.0] * N})

    monkeypatch.setattr(Lesson, "write", bad_trace)
    assert "cost must be > 0" in refused(cli, "teach", "trickle")
    assert opened == []


@pytest.mark.parametrize(("args", "named"), [
    (["--slots", "3"], "--slots applies"),
    (["--replicas", "2", "--slots", "4"], "--slots, --replicas apply"),
    (["--quantum", "5"], "--quantum applies"),
])
def test_explain_of_a_log_refuses_the_options_that_would_replay_it_otherwise(args: list[str], named: str, log: Path,
                                                                            cli: CliRunner) -> None:
    request = read_request(log)
    line = refused(cli, "explain", str(log), request, *args)
    assert f"{log} is an event log, fixed when it was written: {named} to a trace" in line


def test_a_log_given_replica_settings_is_refused_as_a_log_not_for_its_slots(log: Path, cli: CliRunner, opened: list[object]) -> None:
    line = refused(cli, "replay", str(log), "--replicas", "2")
    assert f"{log} is an event log, fixed when it was written: --replicas applies to a trace" in line
    assert opened == []


def read_request(log: Path) -> str:
    return str(pl.read_parquet(log, columns=["request_id"]).drop_nulls()["request_id"][0])
