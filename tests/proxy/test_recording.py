"""A proxy's --record replays to the decisions it made: the same request at every
dispatch, charged the same, by default; a what-if only when asked (--reprice, or an
estimator option). The same for a group's recordings, one a replica, read as one trace."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.proxy.server import ProxyServer
from sfqtui.runs.opening import Opening
from sfqtui.trace.write import read_metadata
from tests.fake_upstream import FakeUpstream, fake_server
from tests.proxy_fixtures import EVENTS_TOKEN, read_events, running_proxy, state, wait_for
from tests.recording_traffic import USERS, send_uneven, write_keys


@pytest.fixture(scope="module")
def uneven() -> Any:
    """An upstream whose answers take time by their length, so that requests queue at the proxy."""
    with fake_server(FakeUpstream(latency_s=0.005, chunk_delay_s=0.003)) as server:
        yield server.url


def run(cli: CliRunner, *args: str) -> str:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def live_dispatches(events: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return [(e["request_id"], e["cost"]) for e in events if e["kind"] == "dispatch"]


def replayed(cli: CliRunner, out: Path, *args: str) -> tuple[list[tuple[str, float]], str]:
    said = run(cli, "simulate", *args, "-o", str(out))
    dispatches = pl.read_parquet(out).filter(pl.col("kind") == "dispatch")
    return list(zip(dispatches["request_id"].to_list(), dispatches["cost"].to_list())), said


def test_a_recording_replays_to_the_dispatches_and_charges_made_live(uneven: str, tmp_path: Path, cli: CliRunner) -> None:
    record = tmp_path / "record.parquet"
    with running_proxy(uneven, write_keys(tmp_path / "keys.toml"), slots=2, record=record, events_token=EVENTS_TOKEN) as px:
        asyncio.run(send_uneven([px.url], 70, seed=7))
        events = read_events(px.url, EVENTS_TOKEN)
    live = live_dispatches(events)
    arrived = [e["request_id"] for e in events if e["kind"] == "arrive"]
    assert len(live) == 70 and [rid for rid, _ in live] != arrived, "SFQ never reordered: the test could not tell a replay from FIFO"

    again, said = replayed(cli, tmp_path / "log.parquet", str(record))
    assert [rid for rid, _ in again] == [rid for rid, _ in live]  # the same request at every position
    assert again == live  # charged the same, to the last bit
    assert "cost: the cost column" in said and "2 slots" in said
    run(cli, "check", str(tmp_path / "log.parquet"))

    rows = pl.read_parquet(record)
    assert {"cost", "ratio", "est_output", "ratio_scope"} <= set(rows.columns)
    assert not {"priority", "flow", "class"} & set(rows.columns)  # no request said one: no column, as in a trace without them
    dispatch_of = {e["request_id"]: e for e in events if e["kind"] == "dispatch"}
    for row in rows.iter_rows(named=True):
        seen = dispatch_of[row["request_id"]]
        assert (row["cost"], row["ratio"], row["est_output"]) == (seen["cost"], seen["ratio"], seen["est_output"])
        assert row["ratio_scope"] == "global"
    metadata = read_metadata(record)
    assert metadata["slots"] == 2 and metadata["weights"] == {"ann": 2.0} and metadata["estimator"]["scope"] == "global"
    raw = record.read_bytes()
    assert not any(key.encode() in raw for key, _ in USERS.values()) and EVENTS_TOKEN.encode() not in raw

    rid, cost = live[40]
    explained = json.loads(run(cli, "explain", str(record), rid, "--json"))
    assert (explained["position"], explained["cost"], explained["repriced"]) == (41, cost, False)

    what_if, said = replayed(cli, tmp_path / "what-if.parquet", str(record), "--ratio-scope", "user")
    assert "--ratio-scope implies --reprice: the trace's costs ignored" in said
    assert read_metadata(tmp_path / "what-if.parquet")["repriced"] is True
    assert [c for _, c in what_if] != [c for _, c in live]
    assert "repriced" not in Opening(record, False, ReplayConfig(slots=2)).source().title
    assert Opening(record, False, ReplayConfig(slots=2, reprice=True)).source().title.endswith(", repriced by the estimator")
    # the header as one line: where it wraps depends on the length of the record's path (longer under a pytest-xdist worker)
    header = " ".join(run(cli, "compare", str(record), "--reprice", "--schedulers", "sfq").split("\nsfq:")[0].split())
    assert "repriced by the estimator (--reprice: the trace's costs ignored)" in header
    assert "repriced" not in run(cli, "compare", str(record), "--schedulers", "sfq")


def test_a_groups_recordings_replay_to_the_groups_dispatches(uneven: str, store: Any, tmp_path: Path, cli: CliRunner) -> None:
    keys = write_keys(tmp_path / "keys.toml")
    records = [tmp_path / f"replica-{k}.parquet" for k in range(2)]
    with running_proxy(uneven, keys, slots=2, state_url=store.url, replica_name="test/0", record=records[0]) as first, \
            running_proxy(uneven, keys, slots=2, state_url=store.url, replica_name="test/1", record=records[1]) as second:
        replicas = [first, second]
        asyncio.run(send_uneven([r.url for r in replicas], 60, seed=11))
        last = state(first.url)["seq"]
        rings = [r.server.proxy.ring for r in replicas if isinstance(r.server, ProxyServer)]
        assert len(rings) == 2
        wait_for(lambda: all(ring.next_seq == last + 1 for ring in rings), what="every replica to read the whole stream")
        events = read_events(first.url)
    live = live_dispatches(events)
    assert len(live) == 60 and {e["replica"] for e in events if e["kind"] == "dispatch"} == {0, 1}
    assert [rid for rid, _ in live] != [e["request_id"] for e in events if e["kind"] == "arrive"]
    held = [pl.read_parquet(r)["request_id"].to_list() for r in records]
    assert held[0] and held[1] and not set(held[0]) & set(held[1])
    assert {read_metadata(r)["group"]["replica"] for r in records} == {"0", "1"}

    again, said = replayed(cli, tmp_path / "log.parquet", *map(str, records))
    assert again == live
    assert "2 slots" in said
    shared, _ = replayed(cli, tmp_path / "global.parquet", *map(str, records), "--replicas", "2", "--share", "global")
    assert shared == live
    rid, cost = live[30]
    explained = json.loads(run(cli, "explain", *map(str, records), rid, "--json"))
    assert (explained["position"], explained["cost"]) == (31, cost)

    refused = cli.invoke(app, ["simulate", str(records[0]), str(records[0]), "-o", str(tmp_path / "twice.parquet")])
    assert refused.exit_code == 2 and "given twice" in refused.output
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(records[1].read_bytes())
    refused = cli.invoke(app, ["simulate", str(records[1]), str(copy), "-o", str(tmp_path / "overlap.parquet")])
    assert refused.exit_code == 2 and "both hold request" in refused.output and len(refused.output.strip().splitlines()) == 1
    refused = cli.invoke(app, ["replay", str(records[0]), str(tmp_path / "log.parquet")])
    assert refused.exit_code == 2 and "is an event log: several files are read as one trace" in refused.output


def test_a_restarted_proxy_that_recorded_nothing_says_so_and_leaves_the_file(uneven: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    record, keys = tmp_path / "record.parquet", write_keys(tmp_path / "keys.toml")
    caplog.set_level(logging.INFO, logger="sfqtui.proxy")
    with running_proxy(uneven, keys, record=tmp_path / "never.parquet"):
        pass
    assert f"recorded no request: {tmp_path / 'never.parquet'} is not written" in caplog.messages
    assert not (tmp_path / "never.parquet").exists()
    with running_proxy(uneven, keys, record=record) as px:
        asyncio.run(send_uneven([px.url], 3, seed=1))
    assert f"recorded 3 requests to {record}" in caplog.messages
    first = record.read_bytes()
    caplog.clear()
    with running_proxy(uneven, keys, record=record):  # restarted, and nobody came
        pass
    assert f"recorded no request: {record} is left as it was" in caplog.messages
    assert record.read_bytes() == first
