"""A recording's engine starts replay as start rows (issue 31 §1): a proxy in front of the emulated
engine (`sfqtui engine`, which says when each request starts running) records them, and a replay
of the recording as it ran puts each start the recorded delay after its dispatch, so that `check`
and `compare` measure fairness at engine start on a recording as on the proxy's own stream. A
what-if (other slots, other costs, the engine model) has no start rows."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.core.analysis.fairness import fairness
from sfqtui.core.limits import LimitSettings
from sfqtui.protocol import LIMIT, START
from sfqtui.trace.write import read_metadata, write_trace
from tests.proxy.test_proxy import log_rows
from tests.proxy.test_recorded_capacity import named, placed, recorded_placements, recording_group, run, running_engine, what_ifs
from tests.proxy_fixtures import EVENTS_TOKEN, read_events, running_proxy
from tests.recording_traffic import USERS, send_uneven, write_keys

Recorded = tuple[Path, list[dict[str, Any]]]


def _record(folder: Path, **settings: Any) -> Recorded:
    """80 requests of four users through a proxy in front of an engine of 4 places, recorded, and the proxy's stream."""
    record = folder / "record.parquet"
    with running_engine() as engine, running_proxy(engine.url, write_keys(folder / "keys.toml"), record=record,
                                                   events_token=EVENTS_TOKEN, **settings) as proxy:
        asyncio.run(send_uneven([proxy.url], 80, seed=7, pause_s=0.01))
        events = read_events(proxy.url, EVENTS_TOKEN, also=(LIMIT, START))
    return record, events


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """8 fixed slots in front of 4 places: requests wait in the engine's queue, so starts come well after dispatches."""
    return _record(tmp_path_factory.mktemp("fixed-starts"), slots=8)


@pytest.fixture(scope="module")
def auto(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory.mktemp("auto-starts"), slots=2, limits=LimitSettings())


def _times(rows: list[dict[str, Any]], kind: str) -> dict[str, float]:
    return {r["request_id"]: r["t"] for r in rows if r["kind"] == kind}


@pytest.mark.parametrize("which", ["fixed", "auto"])
def test_a_replay_of_a_recording_starts_each_request_the_recorded_delay_after_its_dispatch(which: str, tmp_path: Path, cli: CliRunner,
                                                                                         request: pytest.FixtureRequest) -> None:
    record, events = request.getfixturevalue(which)
    live = [e["request_id"] for e in events if e["kind"] == "start"]
    recorded = dict(pl.read_parquet(record).select("request_id", "engine_start_s").iter_rows())
    assert len(live) == 80

    out = tmp_path / "log.parquet"
    run(cli, "simulate", str(record), "-o", str(out))
    log = pl.read_parquet(out)
    rows = log.to_dicts()
    dispatched, started, completed = (_times(rows, kind) for kind in ("dispatch", "start", "complete"))
    # The requests start in the order they did (those the engine started together at one time, in the order they were dispatched).
    assert [recorded[r["request_id"]] for r in rows if r["kind"] == "start"] == sorted(recorded[rid] for rid in live)
    # The recording times a dispatch by the arrival or completion that freed it, as the replay does: each start comes the
    # recorded delay after it, at its recorded time.
    assert all(started[rid] - dispatched[rid] == recorded[rid] - dispatched[rid] for rid in live)
    assert all(dispatched[rid] <= started[rid] < completed[rid] for rid in live)
    assert sum(started[rid] - dispatched[rid] > 0.01 for rid in live) > 10  # requests waited in the engine's queue
    assert read_metadata(out)["engine_starts"] == "recorded"
    for rid in ("r3", "r40"):  # each request's life in order: arrive, dispatch, start, complete
        assert log.filter(pl.col("request_id") == rid)["kind"].to_list() == ["arrive", "dispatch", "start", "complete"]
    # Its dispatch and start name the upstream the stream's events named, by address; the dashboard places it there.
    for kind in ("dispatch", "start"):
        assert named(rows, kind) == named(events, kind) and None not in named(rows, kind).values(), kind
    assert placed(record) == recorded_placements(record) and sum(placed(record).values()) == 80

    checked = run(cli, "check", str(out))  # seq and time order hold (check exits 1 otherwise)
    live_figures = fairness(log_rows(events), {user: weight or 1.0 for user, (_, weight) in USERS.items()}, at_engine_start=True)
    assert live_figures.at_engine_start is not None and live_figures.at_engine_start.worst_gap is not None
    line = next(line for line in checked.splitlines() if "at engine start" in line)
    assert "(80 starts)" in line and "not available" not in checked
    compared = json.loads(run(cli, "compare", str(record), "--schedulers", "sfq", "--json"))
    started = compared["schedulers"]["sfq"]["at_engine_start"]
    assert started is not None and started["worst_gap"]["gap"] == live_figures.at_engine_start.worst_gap.gap  # as on the proxy's stream
    assert {user: figures["started"] for user, figures in started["users"].items()} == \
        {user: figures.dispatched for user, figures in live_figures.at_engine_start.users.items()}
    assert "at engine start" in " ".join(run(cli, "compare", str(record), "--schedulers", "sfq").split())


def test_a_what_if_has_no_engine_starts(fixed: Recorded, tmp_path: Path, cli: CliRunner) -> None:
    record, _ = fixed
    out = tmp_path / "what-if.parquet"
    for args in what_ifs(cli, record, out, ["--slots", "3"], ["--reprice"], ["--scheduler", "fifo"]):
        log = pl.read_parquet(out)
        assert "start" not in log["kind"].to_list() and "engine_starts" not in read_metadata(out), args
        assert "upstream" not in log.columns, args  # nor where its requests went
    compared = json.loads(run(cli, "compare", str(record), "--schedulers", "sfq", "--slots", "3", "--json"))
    assert compared["schedulers"]["sfq"]["at_engine_start"] is None


def test_a_recording_whose_engine_never_said_replays_as_before(fixed: Recorded, tmp_path: Path, cli: CliRunner) -> None:
    record, events = fixed
    frame = pl.read_parquet(record)
    traces = {"silent": frame.with_columns(pl.lit(None, pl.Float64).alias("engine_start_s")), "without": frame.drop("engine_start_s"),
              "unplaced": frame.with_columns(pl.lit(None, pl.Float64).alias("engine_start_s"), pl.lit(None, pl.String).alias("upstream")),
              "bare": frame.drop("engine_start_s", "upstream")}
    logs = {}
    for name, rows in traces.items():
        trace, out = tmp_path / f"{name}.parquet", tmp_path / f"{name}-log.parquet"
        write_trace(rows, trace, read_metadata(record))
        run(cli, "simulate", str(trace), "-o", str(out))
        logs[name] = pl.read_parquet(out)
        assert "start" not in logs[name]["kind"].to_list(), name
        # Without the starts, the rows still name where each request went, where the recording says.
        assert read_metadata(out)["format"] == (4 if name in ("silent", "without") else 2), name
    assert logs["silent"].equals(logs["without"]) and logs["unplaced"].equals(logs["bare"])
    assert named(logs["silent"].to_dicts(), "dispatch") == named(events, "dispatch")
    assert logs["silent"].drop("upstream", "limit", "reason").equals(logs["bare"])
    assert "fairness at engine start" not in run(cli, "check", str(tmp_path / "silent-log.parquet"))


def test_a_groups_recordings_replay_with_the_starts_each_replica_published(store: Any, tmp_path: Path, cli: CliRunner) -> None:
    with recording_group(store, tmp_path, "starts", 60, seed=3) as (_engine, _replicas, records):
        pass  # each replica writes its recording as it stops
    recorded = {rid: t for path in records for rid, t in pl.read_parquet(path).select("request_id", "engine_start_s").iter_rows()}
    assert len(recorded) == 60 and all(t is not None for t in recorded.values())  # each replica recorded its requests' starts

    out = tmp_path / "log.parquet"
    run(cli, "simulate", *map(str, records), "-o", str(out))
    rows = pl.read_parquet(out).to_dicts()
    dispatched, started, completed = (_times(rows, kind) for kind in ("dispatch", "start", "complete"))
    assert started.keys() == recorded.keys()
    # At its recorded time, held between its dispatch and its completion (the store may time a start with the completion).
    assert all(started[rid] == min(max(dispatched[rid], recorded[rid]), math.nextafter(completed[rid], -math.inf)) for rid in started)
    assert "(60 starts)" in " ".join(run(cli, "check", str(out)).split())
