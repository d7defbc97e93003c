"""The measures of semantics §11 (compare --replicas, sweep): by hand on a small case, by
construction under share global, and the §8 limit under hash routing."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.analysis.replication_cost import largest_drift, replica_measures
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replicas.settings import ROUTERS, ReplicaSettings, Share
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers import SCHEDULERS
from sfqtui.sweep.measures import fairness_figures
from sfqtui.sweep.plan import ReplicaGrid, plan_runs
from sfqtui.sweep.runs import run_in_process
from sfqtui.trace.load import load_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"
KEYS = ("worst_gap_cmax", "drift_cmax", "stranded", "makespan_ratio")


def test_stranded_drift_and_makespan_by_hand() -> None:
    """Round-robin over 2 replicas of 1 slot: a1 (4 s) and a2 go to replica 0, b (1 s) to 1.
    From t 1 to 4 replica 1 is free while a2 waits on 0: 3 of the run's 2 x 8 slot-seconds.
    One scheduler with 2 slots sends a2 at 1 (done at 5): A is 2 = 1 c_max behind it from 1 to 4."""
    trace = Trace(request_id=["a1", "b", "a2"], user=["A", "B", "A"], arrival_s=[0.0, 0.0, 0.0], cost=[2.0, 1.0, 2.0],
                  service_s=[4.0, 1.0, 4.0])
    _report, measures = replica_measures(trace, ReplayConfig("sfq", 2, replicas=ReplicaSettings(2, "round-robin")))
    assert measures.stranded == 3 / 16
    assert measures.makespan == 8.0 and measures.reference_makespan == 5.0 and measures.makespan_ratio == 1.6
    assert (measures.c_max, measures.drift, measures.drift_user, measures.drift_t) == (2.0, 2.0, "A", 1.0)
    replicas = measures.replicas
    assert [r["requests"] for r in replicas] == [2, 1] and [r["dispatched"] for r in replicas] == [2, 1]
    assert replicas[1]["stranded"] == 3 / 8 and replicas[0]["stranded"] == 0.0
    assert replicas[0]["busy"] == 1.0 and replicas[1]["busy"] == 1 / 8


def test_largest_drift_evaluates_after_every_step_at_a_time() -> None:
    # both step to 5 at t 1 (no drift), then ours reaches 9 at 2 and the reference only at 4
    assert largest_drift(array("d", [1, 2]), array("d", [5, 9]), array("d", [1, 4]), array("d", [5, 9])) == (4.0, 2.0)
    assert largest_drift(array("d", [1, 1]), array("d", [2, 5]), array("d", [1]), array("d", [5])) == (0.0, 0.0)


@pytest.mark.parametrize("router", ROUTERS)
def test_share_global_is_fair_by_construction(router: str) -> None:
    """Under global the events are one scheduler's: worst gap <= 2 c_max, no drift, nothing stranded, the same makespan."""
    trace = load_trace(TRACES / "heavy-vs-light.parquet").trace
    for scheduler in SCHEDULERS:
        if scheduler == "vtc":
            continue  # needs output_tokens, which this trace has not
        _report, measures = replica_measures(trace, ReplayConfig(scheduler, 4, replicas=ReplicaSettings(3, router, Share("global"))))
        figures = measures.as_dict()
        assert (figures["drift_cmax"], figures["stranded"], figures["makespan_ratio"]) == (0.0, 0.0, 1.0), scheduler
        assert figures["worst_gap_cmax"] == figures["reference_worst_gap_cmax"]
        if scheduler == "sfq":
            gap = measures.in_c_max(measures.worst_gap)
            assert gap is not None and gap <= 2


def test_hash_routing_shows_the_limit_of_article_section_8() -> None:
    """Each user pinned to one replica: capacity stands free while requests wait elsewhere,
    and the gap between users backlogged throughout passes 2 c_max."""
    trace = load_trace(TRACES / "production-20k.parquet").trace
    _report, none = replica_measures(trace, ReplayConfig("sfq", 8, replicas=ReplicaSettings(4, "hash")))
    _report, shared = replica_measures(trace, ReplayConfig("sfq", 8, replicas=ReplicaSettings(4, "hash", Share("global"))))
    assert none.stranded > 0.05 and (none.in_c_max(none.worst_gap) or 0) > 2
    assert none.drift > 0 and none.makespan_ratio is not None and none.makespan_ratio > 1
    assert shared.stranded == 0 and shared.drift == 0 and (shared.in_c_max(shared.worst_gap) or 0) <= 2


def test_compare_json_has_a_replicas_object_per_scheduler() -> None:
    trace = str(TRACES / "heavy-vs-light.parquet")
    result = CliRunner().invoke(cli, ["compare", trace, "--schedulers", "sfq,drr", "--slots", "4", "--replicas", "2",
                                      "--router", "round-robin", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["replicas"]["count"] == 2 and payload["replicas"]["slots"] == [2, 2]
    for name in ("sfq", "drr"):
        replicas = payload["schedulers"][name]["replicas"]
        assert all(isinstance(replicas[key], float) for key in KEYS)
        assert set(replicas["p99_wait"]) == set(payload["schedulers"][name]["users"])
        assert len(replicas["per_replica"]) == 2
    one = json.loads(CliRunner().invoke(cli, ["compare", trace, "--schedulers", "sfq", "--slots", "4", "--json"]).stdout)
    assert "replicas" not in one and "replicas" not in one["schedulers"]["sfq"]


def test_compare_under_share_sync_defaults_to_the_schedulers_with_meters() -> None:
    trace = str(TRACES / "heavy-vs-light.parquet")
    result = CliRunner().invoke(cli, ["compare", trace, "--slots", "4", "--replicas", "2", "--router", "random", "--share", "sync:5", "--json"])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["schedulers"]) == ["sfq", "sfq-reset"]
    refused = CliRunner().invoke(cli, ["compare", trace, "--schedulers", "drr", "--slots", "4", "--replicas", "2", "--share", "sync:5"])
    assert refused.exit_code == 2 and "drr replicates under share none or global" in refused.stderr


def test_compare_prints_the_measures_without_scientific_notation() -> None:
    result = CliRunner().invoke(cli, ["compare", str(TRACES / "heavy-vs-light.parquet"), "--schedulers", "sfq", "--slots", "4",
                                      "--replicas", "2", "--router", "hash"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "one sfq, same slots" in result.output and "stranded capacity" in result.output
    assert "e+" not in result.output


def test_sweep_rows_carry_the_measures_of_compare() -> None:
    path = TRACES / "heavy-vs-light.parquet"
    loaded = load_trace(path)
    grid = ReplicaGrid((1, 2), ("hash", "round-robin"), ("none", "sync:2,0.5", "global"))
    runs = plan_runs({str(path): loaded.suggested_slots}, ["sfq"], [4], replicas=grid)
    assert len(runs) == 1 + 2 * 3  # one replica once, whatever the router and share
    rows = run_in_process(runs, {str(path): loaded.trace}, fairness_figures)
    assert all(row["error"] is None for row in rows)
    assert rows[0]["replicas"] == 1 and rows[0]["router"] is None and (rows[0]["drift_cmax"], rows[0]["stranded"]) == (0.0, 0.0)
    for run, row in zip(runs[1:], rows[1:]):
        _report, measures = replica_measures(loaded.trace, run.config())
        expected = measures.as_dict()
        assert {key: row[key] for key in KEYS} == {key: expected[key] for key in KEYS}
        assert (row["replicas"], row["router"], row["share"]) == (2, run.replicas.router, str(run.replicas.share))


def test_sweep_crosses_replicas_routers_and_shares_on_dask(tmp_path: Path) -> None:
    output = tmp_path / "results.parquet"
    result = CliRunner().invoke(cli, ["sweep", str(TRACES / "heavy-vs-light.parquet"), "--schedulers", "sfq,drr", "--slots", "4",
                                      "--replicas", "1,2", "--router", "hash", "--share", "none,sync:2,0.5,global",
                                      "--workers", "1", "-o", str(output), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["runs"]
    assert [(r["scheduler"], r["replicas"], r["share"]) for r in rows] == [
        ("sfq", 1, None), ("sfq", 2, "none"), ("sfq", 2, "sync:2,0.5"), ("sfq", 2, "global"),
        ("drr", 1, None), ("drr", 2, "none"), ("drr", 2, "sync:2,0.5"), ("drr", 2, "global")]
    failed = [r for r in rows if r["error"]]
    assert [(r["scheduler"], r["share"]) for r in failed] == [("drr", "sync:2,0.5")]  # sync needs meters: that run fails alone
    assert "meters and v" in failed[0]["error"]
    assert all(isinstance(r["stranded"], float) for r in rows if not r["error"])
    assert output.exists()


def test_share_sync_on_one_replica_keeps_the_default_schedulers() -> None:
    result = CliRunner().invoke(cli, ["compare", str(TRACES / "heavy-vs-light.parquet"), "--slots", "4", "--share", "sync:5", "--json"])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["schedulers"]) == ["sfq", "drr", "fifo", "rr"]
