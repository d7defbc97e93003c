"""A replicated replay's log (semantics §11): written by simulate, checked by check (per
replica, with sync, as one scheduler under global), opened by replay and explain."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.events import KINDS
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.schema import METADATA_KEY
from sfqtui.ui.app import SfqApp
from tests.dashboard import SIZE, settle

TRACES = Path(__file__).resolve().parents[2] / "traces"
TRACE = TRACES / "production-20k.parquet"
SHARES = ("none", "sync:5", "sync:2,1", "global")


def simulated(tmp_path: Path, *options: str, trace: Path = TRACE, name: str = "log.parquet") -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(cli, ["simulate", str(trace), "-o", str(out), *options])
    assert result.exit_code == 0, result.output
    return out


Columns = dict[str, list]  # a log's columns by name, as Python lists (row k is the k-th of each)


def rewritten(log: Path, out: Path, change) -> Path:
    """The log with its rows changed by ``change(columns)``, metadata kept."""
    table = pq.read_table(log)
    columns = table.to_pydict()
    change(columns)
    pq.write_table(pa.Table.from_pydict(columns, schema=table.schema), out)
    return out


def checked(log: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", str(log)])
    return result.exit_code, result.output


@pytest.mark.parametrize("share", SHARES)
def test_a_replicated_log_records_its_replicas_and_passes_check(tmp_path: Path, share: str) -> None:
    log = simulated(tmp_path, "--slots", "14", "--replicas", "4", "--router", "random", "--share", share, "--seed", "5")
    table = pq.read_table(log)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    assert meta["format"] == 3 and meta["slots"] == 14
    assert meta["replicas"]["count"] == 4 and meta["replicas"]["router"] == "random" and meta["replicas"]["seed"] == 5
    assert meta["replicas"]["share"] == share
    assert meta["replicas"]["slots"] == (None if share == "global" else [4, 4, 3, 3])
    kinds, replicas = table["kind"].to_pylist(), table["replica"].to_pylist()
    assert all(0 <= rep < 4 for rep, rid in zip(replicas, table["request_id"].to_pylist()) if rid is not None)
    resets = [rep for rep, kind in zip(replicas, kinds) if kind == "idle_reset"]
    assert resets and all((rep is None) == (share == "global") for rep in resets)
    assert ("sync" in kinds) == share.startswith("sync")
    code, output = checked(log)
    assert code == 0, output
    assert "4 replicas, random (seed 5)" in output and "no violations" in output
    if share != "global":
        assert "(on each replica)" in output


@pytest.mark.parametrize("scheduler", ["drr", "vtc", "fifo", "rr", "sfq-reset"])
def test_other_schedulers_replicated_pass_check(tmp_path: Path, scheduler: str) -> None:
    trace = TRACES / "calibration.parquet"
    for share in ("none", "global"):
        log = simulated(tmp_path, "-s", scheduler, "--slots", "6", "--replicas", "3", "--router", "least-loaded", "--share", share,
                        trace=trace, name=f"{scheduler}-{share}.parquet")
        code, output = checked(log)
        if scheduler == "sfq-reset":  # its loophole breaks only the 2 c_max bound
            assert all("[§3.2/§3.3]" in line for line in output.splitlines() if line.startswith("  seq ")), output
        else:
            assert code == 0 and "no violations" in output, output


def test_one_replica_writes_todays_log_byte_for_byte(tmp_path: Path) -> None:
    plain = simulated(tmp_path, "--slots", "8", name="plain.parquet")
    one = simulated(tmp_path, "--slots", "8", "--replicas", "1", "--router", "least-loaded", "--share", "sync:3", name="one.parquet")
    assert plain.read_bytes() == one.read_bytes()
    assert "replica" not in pq.read_schema(plain).names
    assert json.loads(pq.read_schema(plain).metadata[METADATA_KEY])["format"] == 2


def _swap_two_dispatches(columns: Columns, replica: int) -> None:
    """Swap the picks of two successive dispatches on ``replica`` of different users (seq and t stay)."""
    kinds, users = columns["kind"], columns["user"]
    mine = [k for k, rep in enumerate(columns["replica"]) if rep == replica and kinds[k] == "dispatch" and k > 200]
    for a, b in zip(mine, mine[1:]):
        if users[a] != users[b]:
            for name, column in columns.items():
                if name not in ("seq", "t"):
                    column[a], column[b] = column[b], column[a]
            return
    raise AssertionError("no two dispatches to swap")


def test_check_names_the_replica_of_a_swapped_pick(tmp_path: Path) -> None:
    log = simulated(tmp_path, "--slots", "4", "--replicas", "2", "--router", "round-robin")
    code, output = checked(rewritten(log, tmp_path / "swapped.parquet", lambda rows: _swap_two_dispatches(rows, 1)))
    violations = [line for line in output.splitlines() if line.startswith("  seq ")]
    assert code == 1 and any("[§3 pick] replica 1:" in line for line in violations)
    assert not any("replica 0:" in line for line in violations), violations


def test_check_catches_a_lowered_meter(tmp_path: Path) -> None:
    log = simulated(tmp_path, "--slots", "8", "--replicas", "2", "--router", "hash")

    def lower(columns: Columns) -> None:
        k = next(k for k, (kind, rep) in enumerate(zip(columns["kind"], columns["replica"])) if kind == "dispatch" and rep == 0 and k > 500)
        columns["meter"][k] -= 1.0

    code, output = checked(rewritten(log, tmp_path / "lowered.parquet", lower))
    assert code == 1 and "[§3 charge] replica 0:" in output


def test_check_verifies_every_sync_row(tmp_path: Path) -> None:
    log = simulated(tmp_path, "--slots", "8", "--replicas", "2", "--router", "random", "--share", "sync:4,1")

    def lower(columns: Columns) -> None:
        k = next(k for k, kind in enumerate(columns["kind"]) if kind == "sync" and k > 500)
        columns["meter"][k] -= 0.5

    code, output = checked(rewritten(log, tmp_path / "lowered.parquet", lower))
    assert code == 1 and "[§11 sync] replica" in output

    def drop(columns: Columns) -> None:
        k = next(k for k, kind in enumerate(columns["kind"]) if kind == "sync" and k > 500)
        for column in columns.values():
            del column[k]
        columns["seq"] = list(range(len(columns["seq"])))

    code, output = checked(rewritten(log, tmp_path / "dropped.parquet", drop))
    assert code == 1 and "no sync row raising" in output


def test_check_verifies_the_router(tmp_path: Path) -> None:
    log = simulated(tmp_path, "--slots", "8", "--replicas", "2", "--router", "hash", "--share", "global")

    def move(columns: Columns) -> None:
        rid = columns["request_id"][columns["kind"].index("arrive")]
        replicas = columns["replica"]
        for k, request in enumerate(columns["request_id"]):
            if request == rid:
                replicas[k] = 1 - replicas[k]

    code, output = checked(rewritten(log, tmp_path / "moved.parquet", move))
    assert code == 1 and "hash routing sends it to" in output


def test_bad_replica_settings_are_one_line(tmp_path: Path) -> None:
    for options, message in ((["--replicas", "4", "--slots", "3"], "fewer than --replicas 4"),
                             (["--replicas", "0"], "--replicas must be >= 1"),
                             (["--replicas", "2", "--share", "sync:soon"], "bad --share"),
                             (["--replicas", "2", "--router", "sticky"], "unknown router"),
                             (["--replicas", "2", "-s", "drr", "--share", "sync:1"], "meters and v")):
        result = CliRunner().invoke(cli, ["simulate", str(TRACE), "-o", str(tmp_path / "x.parquet"), *options])
        assert result.exit_code == 2, (options, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (options, result.output)


def test_a_replicated_log_opens_in_explain(tmp_path: Path) -> None:
    log = simulated(tmp_path, "--slots", "8", "--replicas", "4", "--share", "sync:5")
    rid = next(r["request_id"] for r in pq.read_table(log, columns=["kind", "request_id"]).to_pylist()[3000:] if r["kind"] == "dispatch")
    for extra in ([], ["--json"]):
        result = CliRunner().invoke(cli, ["explain", str(log), rid, *extra])
        assert result.exit_code == 0, result.output
    assert json.loads(result.output)["request_id"] == rid


def test_a_replicated_log_loads_with_its_replicas(tmp_path: Path) -> None:
    log = simulated(tmp_path, "--slots", "8", "--replicas", "3", "--share", "sync:5", "--router", "least-loaded")
    run = Run(Opening(log, is_log=True, config=ReplayConfig())).load_all()
    table = run.table
    assert table.replicated and len(table.replica) == len(table)
    assert {table.replica_of(k) for k in table.dispatches} == {0, 1, 2}
    assert any(table.kind_name(k) == "sync" for k in range(len(table)))
    assert run.metadata["replicas"]["router"] == "least-loaded"
    assert KINDS[6:] == ("sync", "merge", "start", "limit")  # new kinds are appended: older ones keep their codes


@pytest.mark.parametrize("scheduler,share", [("sfq", "none"), ("sfq", "sync:5"), ("drr", "none"), ("sfq", "global")])
async def test_a_replicated_log_opens_in_the_dashboard(tmp_path: Path, scheduler: str, share: str) -> None:
    log = simulated(tmp_path, "-s", scheduler, "--slots", "8", "--replicas", "4", "--share", share, trace=TRACES / "demo.parquet")
    app = SfqApp(Opening(log, is_log=True, config=ReplayConfig()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.loading and len(app.table) > 0 and app.table.replicated
        await pilot.press("end", "left", "n", "p", "x")
        await pilot.pause()
        assert app.checked
        assert not app.runs[0].audit_failure and not app.runs[0].violations


async def test_a_trace_replays_as_replicas_in_the_dashboard() -> None:
    config = ReplayConfig("sfq", 6, replicas=ReplicaSettings(3, "round-robin", Share.parse("sync:10")))
    app = SfqApp(Opening(TRACES / "demo.parquet", is_log=False, config=config, slots_given=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.table.replicated and "3 replicas, round-robin, share sync:10" in app.runs[0].title
        await pilot.press("n", "n", "right")
        assert not app.runs[0].violations
