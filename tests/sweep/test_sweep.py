"""`sfqtui sweep` on real Dask clusters (two workers) and the calibrate alternatives."""

import json
import logging
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from dask.distributed import LocalCluster
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.sweep.alternatives import IN_PROCESS_LIMIT, ratio_alternatives, reference_runs, run_alternatives
from sfqtui.sweep.cluster import dask_client, run_on_dask
from sfqtui.sweep.measures import fairness_figures
from sfqtui.sweep.plan import plan_runs
from sfqtui.sweep.runs import run_in_process
from sfqtui.trace.load import load_trace

pytestmark = pytest.mark.xdist_group("test_sweep")  # one worker starts the module's running cluster once


def generated(directory: Path, scenario: str, *options: str) -> Path:
    path = directory / f"{scenario}.parquet"
    assert CliRunner().invoke(app, ["gen", scenario, "-o", str(path), *options]).exit_code == 0
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("sweep")
    return {"calibration": generated(directory, "calibration"), "seed": generated(directory, "seed-example")}


@pytest.fixture(scope="module")
def running_cluster() -> Iterator[LocalCluster]:
    """A Dask scheduler with two workers that outlives each sweep, as a cluster on other machines would."""
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        yield cluster


def sweep_json(cli: CliRunner, *args: str) -> list[dict]:
    result = cli.invoke(app, ["sweep", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"]


def without_seconds(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_sweep_rows_equal_compare(traces: dict[str, Path], running_cluster: LocalCluster, cli: CliRunner) -> None:
    trace = str(traces["calibration"])
    rows = sweep_json(cli, trace, "--schedulers", "sfq,drr,vtc", "--ratio-scope", "global,user",
                      "--cluster", running_cluster.scheduler_address)
    assert [(r["scheduler"], r["ratio_scope"]) for r in rows] == [
        ("sfq", "global"), ("sfq", "user"), ("drr", "global"), ("drr", "user"), ("vtc", "global"), ("vtc", "user")]
    for scope in ("global", "user"):
        result = cli.invoke(app, ["compare", trace, "--schedulers", "sfq,drr,vtc", "--ratio-scope", scope, "--json"])
        compared = json.loads(result.stdout)
        for row in (r for r in rows if r["ratio_scope"] == scope):
            expected = compared["schedulers"][row["scheduler"]]
            gap = expected["worst_gap"]
            assert row["slots"] == compared["slots"] and row["error"] is None
            assert row["jain"] == expected["jain"]
            assert row["congested_dispatches"] == expected["congested_dispatches"]
            assert (row["worst_gap"], row["worst_gap_ahead"], row["worst_gap_behind"], row["worst_gap_start_t"],
                    row["worst_gap_end_t"], row["worst_gap_exact"]) == (
                gap["gap"], gap["ahead"], gap["behind"], gap["start_t"], gap["end_t"], gap["exact"])
            assert {u.pop("user"): u for u in row["users"]} == expected["users"]
    assert running_cluster.status.name == "running"  # --cluster leaves a running cluster running


def test_a_failing_run_does_not_sink_the_sweep(traces: dict[str, Path], running_cluster: LocalCluster, tmp_path: Path,
                                               cli: CliRunner) -> None:
    # On the running cluster: a cluster of its own would add nothing (the command starts one in
    # tests/sweep/test_replicas_measures.py, and test_local_cluster_starts_and_stops_cleanly below).
    output = tmp_path / "results.parquet"
    result = cli.invoke(app, ["sweep", str(traces["seed"]), str(traces["calibration"]), "--schedulers", "sfq,vtc",
                              "--slots", "1,4", "--cluster", running_cluster.scheduler_address, "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert "2 of 8 runs failed" in result.stderr
    table = pl.read_parquet(output)
    assert table.height == 8
    failed = table.filter(pl.col("error").is_not_null())
    assert failed.select("trace", "scheduler").unique().rows() == [(str(traces["seed"]), "vtc")]
    assert failed["error"].str.contains("output_tokens|input_tokens").all()
    assert failed["jain"].is_null().all()
    worked = table.filter(pl.col("error").is_null())
    fewest_users = worked["users"].list.len().min()
    assert worked["jain"].is_not_null().all() and isinstance(fewest_users, int) and fewest_users >= 2


def test_local_cluster_starts_and_stops_cleanly(traces: dict[str, Path]) -> None:
    loaded = load_trace(traces["calibration"])
    runs = plan_runs({"calibration": loaded.suggested_slots}, ["sfq", "fifo"], [2, 8])
    before = {child.pid for child in multiprocessing.active_children()}
    with dask_client(workers=2) as client:
        worker_pids = set(client.run(os.getpid).values())
        assert len(worker_pids) == 2 and worker_pids <= {child.pid for child in multiprocessing.active_children()}
        on_dask = run_on_dask(client, runs, {"calibration": loaded.trace}, fairness_figures)
    assert client.status == "closed"
    assert {child.pid for child in multiprocessing.active_children()} <= before  # also reaps the exited ones
    for pid in worker_pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert without_seconds(on_dask) == without_seconds(run_in_process(runs, {"calibration": loaded.trace}, fairness_figures))


@pytest.mark.parametrize("args,message", [
    (["--schedulers", "sfq,wfq"], "unknown scheduler(s) wfq"),
    (["--slots", "8,0"], "slots must be >= 1"),
    (["--slots", "eight"], "whole numbers"),
    (["--ratio-scope", "tenant"], "unknown ratio scope(s) tenant"),
    (["--ratio-update", "sliding"], "unknown ratio update(s) sliding"),
    (["--workers", "0"], "--workers must be >= 1"),
    (["--workers", "2", "--cluster", "tcp://127.0.0.1:8786"], "exclude each other"),
    (["missing.parquet"], "missing.parquet: no such file"),
])
def test_bad_settings_are_refused_before_anything_starts(traces: dict[str, Path], tmp_path: Path, cli: CliRunner,
                                                          args: list[str], message: str) -> None:
    output = tmp_path / "results.parquet"
    result = cli.invoke(app, ["sweep", str(traces["calibration"]), *args, "-o", str(output)])
    assert result.exit_code == 2
    assert message in result.stderr
    assert not output.exists()


def test_calibrate_alternatives_run_on_a_local_cluster_above_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_trace(generated(tmp_path, "calibration", "--requests", "300"))
    config = ReplayConfig("sfq", loaded.suggested_slots or 1)
    runs = [*reference_runs("calibration", config).values(), *ratio_alternatives("calibration", loaded.trace, config)]
    # The limit a hundredth of its size, with the trace: the same decision, without replaying 200,000 requests to reach it.
    monkeypatch.setattr("sfqtui.sweep.alternatives.IN_PROCESS_LIMIT", IN_PROCESS_LIMIT // 100)
    assert len(loaded.trace) * len(runs) > IN_PROCESS_LIMIT // 100
    rows, where = run_alternatives(runs, loaded.trace)
    assert where.startswith("on a local Dask cluster")
    assert all(row["error"] is None and row["worst_gap_actual"] for row in rows)
