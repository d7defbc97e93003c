"""A recording that joins a real proxy late (its ring already dropped seq 0) starts from the
proxy's state at the join, kept in the log as its snapshot (docs/semantics.md §7): `check`
audits it from there and says so, and a snapshot that lies (a meter lowered) is caught."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import openai
import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from sfqtui.attach.run_logs import RunLogs
from sfqtui.attach.source import AuditSoFar, AuditStopped, LiveSource
from sfqtui.cli.app import app as cli_app
from sfqtui.core.analysis.audit import Snapshot, audit
from sfqtui.core.analysis.audit.snapshot import UserAtSnapshot
from sfqtui.core.log.rows import LogRows
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.eventlog import read_log
from sfqtui.trace.notices import Notice
from sfqtui.trace.schema import LOG_SCHEMA, METADATA_KEY
from tests.proxy.test_proxy_stream import Follower, ask
from tests.proxy_fixtures import KEY_OF, openai_sync_http, running_proxy, state, wait_for


def slow(url: str, user: str, n: int) -> None:
    client = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, timeout=30)
    client.completions.create(model="m", prompt=f"[slow] {n} one two three", max_tokens=16)


def recorded_late(url: str, saved: Path) -> tuple[dict[str, Any], list[Notice]]:
    """Traffic past the ring, then the dashboard's source joined while requests are queued,
    recording (as attach --record does); returns the log's metadata and the source's notices."""
    ask(url, 8, user="bob")  # about 30 events: more than the ring holds
    jobs = [threading.Thread(target=slow, args=(url, user, n)) for n, user in enumerate(("alice", "carol", "bob", "carol", "alice"))]
    for job in jobs:
        job.start()
    wait_for(lambda: sum(u["queued"] for u in state(url)["users"]) >= 3, what="requests queued")
    source = LiveSource([url], record=RunLogs(saved, url))
    notices: list[Notice] = []
    follower = threading.Thread(target=lambda: notices.extend(item for item, _ in source.batches() if isinstance(item, Notice)))
    follower.start()
    for job in jobs:
        job.join(30)
    ask(url, 2, user="carol")
    wait_for(lambda: source._stream.last_seq == state(url)["seq"], what="the source to catch up")
    source.close()
    follower.join(10)
    _df, metadata = read_log(saved)
    return metadata, notices


def test_a_late_recording_is_audited_from_the_proxys_state_at_the_join(fake, keys_path: Path, tmp_path: Path, cli: CliRunner) -> None:
    _, upstream_url = fake
    saved = tmp_path / "late.parquet"
    with running_proxy(upstream_url, keys_path, slots=1, ring_size=16) as px:
        metadata, notices = recorded_late(px.url, saved)
    # The dashboard's own audit also went on from the join: nothing stopped it, nothing broke.
    assert not [n for n in notices if isinstance(n, (AuditStopped, AuditSoFar))], notices
    df, _ = read_log(saved)
    snapshot = metadata["snapshot"]
    n = snapshot["seq"]
    assert n > 16 and df["seq"][0] == n and df["kind"][0] == "gap" and df["v"][0] == snapshot["v"]
    assert df["seq"].to_list() == list(range(n, n + df.height))  # no hole after the snapshot
    backlogged = [u for u in snapshot["users"] if u["queued"]]
    assert backlogged, snapshot  # the join found requests waiting: the log dispatches requests it never saw arrive

    result = cli.invoke(cli_app, ["check", str(saved)])
    assert result.exit_code == 0, result.output
    assert f"audited from seq {n:,} (a snapshot of the proxy's state at the join)" in result.output
    assert "no violations" in result.output

    # A request that arrived before the join and is dispatched after it: explain and the replay read it.
    dispatched = df.filter(df["kind"] == "dispatch")["request_id"].to_list()
    arrived = set(df.filter(df["kind"] == "arrive")["request_id"].to_list())
    waiting = next(rid for rid in dispatched if rid not in arrived)
    explained = cli.invoke(cli_app, ["explain", str(saved), waiting])
    assert explained.exit_code == 2 and f"{waiting} arrived before {saved} starts" in explained.output, explained.output
    later = next(rid for rid in dispatched if rid in arrived)
    explained = cli.invoke(cli_app, ["explain", str(saved), later])
    assert explained.exit_code == 0 and later in explained.output, explained.output
    replayed = Run(Opening(saved, is_log=True, config=ReplayConfig())).load_all()
    assert len(replayed.table) == df.height and replayed.table.first_seq == n  # the dashboard shows the log's own seqs
    replayed.cursor.end()
    end = replayed.state()  # from the snapshot's queues: everything that waited at the join was served
    assert end.queued_total == 0 and end.inflight == 0 and min(end.queued) == 0, end

    # A meter lowered in the snapshot: the user's next pick contradicts it.
    lowered = backlogged[0]
    lowered["meter"] -= 7.0
    table = pq.read_table(saved)
    meta = dict(table.schema.metadata)
    meta[METADATA_KEY] = json.dumps({**metadata, "snapshot": snapshot}).encode()
    tampered = tmp_path / "tampered.parquet"
    pq.write_table(table.replace_schema_metadata(meta), tampered)
    result = cli.invoke(cli_app, ["check", str(tampered)])
    assert result.exit_code == 1, result.output
    assert "[§3 pick]" in result.output and lowered["user"] in result.output, result.output


def test_a_recording_from_seq_0_has_no_snapshot(fake, keys_path: Path, tmp_path: Path, cli: CliRunner) -> None:
    _, upstream_url = fake
    saved = tmp_path / "whole.parquet"
    with running_proxy(upstream_url, keys_path, slots=1) as px:
        follower = Follower(px.url, log=saved)
        ask(px.url, 3, user="bob")
        follower.caught_up(px.url)
        follower.stop()
    _df, metadata = read_log(saved)
    assert "snapshot" not in metadata
    result = cli.invoke(cli_app, ["check", str(saved)])
    assert result.exit_code == 0 and "audited from" not in result.output, result.output


def rows(*events: tuple[int, str, str | None, str | None, float | None, float | None, float | None]) -> LogRows:
    """(seq, kind, request, user, cost, v, meter) each, as a log's rows."""
    seq, kind, rid, user, cost, v, meter = (list(column) for column in zip(*events))
    return LogRows("sfq", seq, [float(s) for s in seq], kind, user, rid, cost, v, meter, [None] * len(seq))


def test_the_snapshot_counts_the_requests_a_late_log_may_first_show_at_their_dispatch() -> None:
    snapshot = Snapshot(10, 5.0, {"bob": UserAtSnapshot(5.0, queued=1, inflight=1)})
    log = rows((10, "gap", None, None, None, 5.0, None), (11, "dispatch", "r1", "bob", 2.0, 5.0, 7.0),
               (12, "complete", "r0", "bob", None, 5.0, 7.0), (13, "idle_reset", None, None, None, 7.0, None),
               (14, "complete", "r1", "bob", None, 7.0, 7.0))
    assert audit(log, snapshot=snapshot).ok
    one_queued_too_few = Snapshot(10, 5.0, {"bob": UserAtSnapshot(5.0, queued=0, inflight=1)})
    found = audit(log, snapshot=one_queued_too_few).violations
    assert [(v.seq, v.rule) for v in found][:2] == [(11, "structure"), (11, "§3 pick")], found
    assert "request r1: dispatch after nothing" in found[0].message


def test_a_malformed_snapshot_is_refused_in_one_line(tmp_path: Path, cli: CliRunner) -> None:
    log = tmp_path / "late.parquet"
    table = pa.Table.from_pylist([{"seq": 3, "t": 1.0, "kind": "gap", "scheduler": "sfq", "request_id": None, "user": None,
                                   "cost": None, "v": 0.0, "meter": None, "deficit": None}], schema=LOG_SCHEMA)
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps({"format": 2, "snapshot": {"seq": 3}}).encode()}), log)
    result = cli.invoke(cli_app, ["check", str(log)])
    assert result.exit_code == 2 and "the log's snapshot (its metadata) is malformed" in result.output and "Traceback" not in result.output
