"""Each replica's own state rebuilt from a replicated log (core/log/replica_states.py),
checked against the log's rows of that replica read directly from the Parquet file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run

TRACE = Path(__file__).resolve().parents[2] / "traces" / "calibration.parquet"


def log_path(tmp_path: Path, share: str) -> Path:
    return tmp_path / f"log-{share}.parquet"


def replicated_run(tmp_path: Path, share: str, router: str = "random") -> Run:
    log = log_path(tmp_path, share)
    result = CliRunner().invoke(cli, ["simulate", str(TRACE), "-o", str(log), "--slots", "5", "--replicas", "3",
                                      "--router", router, "--share", share, "--seed", "2"])
    assert result.exit_code == 0, result.output
    return Run(Opening(log, is_log=True, config=ReplayConfig())).load_all()


def expected(rows: list[dict], r: int, k: int) -> dict[str, object]:
    """Replica r's v, meters, queues and flights after event k, straight from the rows."""
    v = None
    meter: dict[str, float] = {}
    queued: dict[str, int] = {}
    inflight: dict[str, int] = {}
    for row in rows[: k + 1]:
        if row["replica"] != r:
            continue
        if row["v"] is not None:
            v = row["v"]
        user = row["user"]
        if user is None:
            continue
        if row["meter"] is not None:
            meter[user] = row["meter"]
        kind = row["kind"]
        queued[user] = queued.get(user, 0) + (kind == "arrive") - (kind == "dispatch")
        inflight[user] = inflight.get(user, 0) + (kind == "dispatch") - (kind == "complete")
    return {"v": v, "meter": meter, "queued": {u: q for u, q in queued.items() if q},
            "inflight": {u: n for u, n in inflight.items() if n}}


@pytest.mark.parametrize("share", ["none", "sync:20,5"])
def test_each_replica_state_is_its_own_rows(tmp_path: Path, share: str) -> None:
    run = replicated_run(tmp_path, share)
    rows = pq.read_table(log_path(tmp_path, share)).to_pylist()
    table = run.table
    states = ReplicaStates(table, ReplicaSettings.from_metadata(run.metadata["replicas"]), every=16, budget=5_000)
    assert states.count == 3 and states.split
    n = len(table)
    for k in [0, 17, 400, n // 3, n // 2, n - 500, n - 1, n // 4, 3]:  # forward and back, across checkpoints
        for r in range(3):
            s = states.state_at(r, k)
            want = expected(rows, r, k)
            assert (s.v if s.v == s.v else None) == want["v"]
            names = table.users
            assert {names[u]: s.value[u] for u in range(len(names)) if s.value[u] == s.value[u]} == want["meter"]
            assert {names[u]: q for u, q in enumerate(s.queued) if q} == want["queued"]
            assert {names[u]: f for u, f in enumerate(s.inflight_of) if f} == want["inflight"]
            assert s.t == table.t[k]
    assert states.every > 16  # the budget thinned the checkpoints


def test_under_global_a_replica_holds_its_requests_with_the_one_schedulers_meters(tmp_path: Path) -> None:
    run = replicated_run(tmp_path, "global", router="round-robin")
    table = run.table
    states = ReplicaStates(table, ReplicaSettings.from_metadata(run.metadata["replicas"]))
    assert not states.split
    k = len(table) // 2
    overall = run.timeline.state_at(k)
    parts = [states.state_at(r, k, overall) for r in range(3)]
    assert all(p.v == overall.v and p.value is overall.value for p in parts)
    for u in range(len(table.users)):
        assert sum(p.queued[u] for p in parts) == overall.queued[u]
        assert sum(p.inflight_of[u] for p in parts) == overall.inflight_of[u]
