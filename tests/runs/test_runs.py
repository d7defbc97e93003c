"""Runs: several at once, stepped in lockstep; checkpoints sized to the log; log formats."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.events import DISPATCH
from sfqtui.core.log.lockstep import follow
from sfqtui.core.log.timeline import CheckpointBuilder, State, Timeline, apply_events
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening, rerunnable
from sfqtui.runs.run import Run
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.trace.load import load_trace
from sfqtui.trace.schema import METADATA_KEY, NEWEST_LOG_FORMAT
from sfqtui.trace.simulate import simulate
from sfqtui.trace.sources import LogFileSource, ReplaySource

TRACES = Path(__file__).resolve().parents[2] / "traces"


def run_of(trace: str, scheduler: str, slots: int = 1) -> Run:
    return Run(Opening(TRACES / trace, is_log=False, config=ReplayConfig(scheduler, slots), slots_given=True)).load_all()


@pytest.fixture
def sfq_and_drr() -> tuple[Run, Run]:
    return run_of("heavy-vs-light.parquet", "sfq", 2), run_of("heavy-vs-light.parquet", "drr", 2)


def test_lockstep_by_time_forward_and_back(sfq_and_drr: tuple[Run, Run]) -> None:
    leader, other = sfq_and_drr
    for step in [1] * 400 + [-1] * 200 + [7] * 30 + [-5] * 40:
        leader.cursor.step(step)
        follow(leader.cursor, [other.cursor], "time")
        t = leader.cursor.time
        if t is None:
            assert other.cursor.k == -1
            continue
        k = other.cursor.k
        assert k == -1 or other.table.t[k] <= t
        # the last event at or before t, or one at t itself (paired within t: tests/core/test_lockstep.py)
        assert k + 1 >= len(other.table) or other.table.t[k + 1] > t or other.table.t[k] == t


def test_lockstep_by_dispatch_forward_and_back(sfq_and_drr: tuple[Run, Run]) -> None:
    leader, other = sfq_and_drr
    for mover in [leader.cursor.next_dispatch] * 120 + [leader.cursor.previous_dispatch] * 60 + [lambda: leader.cursor.step(3)] * 50:
        mover()
        follow(leader.cursor, [other.cursor], "dispatch")
        n = leader.cursor.dispatch_number
        assert other.cursor.dispatch_number == n
        if n >= 0 and leader.table.kind[leader.cursor.k] == DISPATCH:
            assert other.table.kind[other.cursor.k] == DISPATCH  # the k-th dispatch of each faces the other
    leader.cursor.home()
    follow(leader.cursor, [other.cursor], "dispatch")
    assert other.cursor.k == -1


def test_checkpoints_thin_themselves_within_their_budget() -> None:
    run = run_of("production-20k.parquet", "sfq", 8)
    table = run.table
    per_checkpoint = len(table.users) * 52
    builder = CheckpointBuilder(every=64, budget=per_checkpoint * 10)
    timeline = Timeline(table, every=64)
    source = ReplaySource(load_trace(TRACES / "production-20k.parquet"), ReplayConfig("sfq", 8))
    for batch, _ in source.batches():
        timeline.add_checkpoints(builder.consume(batch), builder.every)
    assert builder.every > 64 and timeline.checkpoints <= 10
    fresh = State()  # every event from the start, applied in order (apply_events goes on from fresh.k)
    fresh.grow(len(table.users))
    for k in range(-1, len(table), len(table) // 97):
        apply_events(fresh, table, 0, k, table.weights)
        got = timeline.state_at(k)
        assert (got.k, list(got.queued), list(got.charged), got.dispatched_total) == (fresh.k, list(fresh.queued), list(fresh.charged), fresh.dispatched_total)


def _rewrite(log: Path, out: Path, drop: list[str], metadata: dict) -> None:
    table = pq.read_table(log)
    table = table.drop_columns([c for c in drop if c in table.column_names])
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata).encode()}), out)


def test_a_log_of_the_first_format_still_opens(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    simulate(load_trace(TRACES / "demo.parquet"), ReplayConfig("sfq", 4), log)
    old = tmp_path / "old.parquet"
    metadata = json.loads(pq.read_schema(log).metadata[METADATA_KEY])
    del metadata["format"]
    _rewrite(log, old, ["est_output", "output_tokens"], metadata)
    new, was = Run(Opening(log, is_log=True, config=ReplayConfig())).load_all(), Run(Opening(old, is_log=True, config=ReplayConfig())).load_all()
    assert list(was.table.kind) == list(new.table.kind) and list(was.table.cost) == list(new.table.cost)
    assert all(x != x for x in was.table.est_output) and all(x != x for x in was.table.output)
    assert any(x == x for x in new.table.est_output) or any(x == x for x in new.table.output)
    result = CliRunner().invoke(cli, ["check", str(old)])
    assert result.exit_code == 0, result.output


def test_a_log_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    simulate(load_trace(TRACES / "seed-example.parquet"), ReplayConfig("sfq", 1), log)
    newer = tmp_path / "newer.parquet"
    metadata = json.loads(pq.read_schema(log).metadata[METADATA_KEY])
    _rewrite(log, newer, [], {**metadata, "format": NEWEST_LOG_FORMAT + 1})
    for command in (["check", str(newer)], ["replay", str(newer)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2, (command, result.output)
        assert f"log format {NEWEST_LOG_FORMAT + 1}" in result.output and "upgrade sfqtui" in result.output
    with pytest.raises(Exception, match="upgrade sfqtui"):
        LogFileSource(newer)


def test_every_opening_names_itself_and_only_a_trace_reruns() -> None:
    trace = Opening(TRACES / "seed-example.parquet", is_log=False, config=ReplayConfig("sfq"))
    log = Opening(TRACES / "seed-example.parquet", is_log=True, config=ReplayConfig("sfq"))
    live = LiveOpening("http://127.0.0.1:8080/v1")
    assert trace.title == str(TRACES / "seed-example.parquet")
    assert live.title == "live: http://127.0.0.1:8080"  # the proxy's base URL, as the stream's own title gives it
    assert rerunnable(trace) is trace and rerunnable(log) is None and rerunnable(live) is None
