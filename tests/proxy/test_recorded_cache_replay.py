"""A replay of a recording as it ran carries the recording's cache figures where the proxy's
stream carried them: a lone proxy under `--placement prefix` in front of two emulated engines
(`sfqtui engine`, prefix caches on) records what its index predicted each upstream held and
what the upstream's usage said it held, and the replay writes the first on each request's
dispatch row and the second on its complete row, so the dashboard's placement figures of the
replayed recording (opened directly, or its saved log) are those of the live stream."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.attach.stream import EventStream
from sfqtui.cli.replay import _opening
from sfqtui.cli.replay_options import NO_CHOICES
from sfqtui.core.log.placements import Placements
from sfqtui.core.log.table import EventTable
from sfqtui.runs.run import Run
from sfqtui.trace.sources import ArrowBatcher
from tests.proxy.test_prefix_placement import conversations, two_engines
from tests.proxy.test_recorded_capacity import run, what_ifs
from tests.proxy_fixtures import EVENTS_TOKEN, read_events, running_proxy, write_keys

Recorded = tuple[Path, list[dict[str, Any]]]
Figures = dict[str, tuple[int, int | None, int | None]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Three conversations of four turns through a lone proxy placing by prefix, recorded, and the proxy's stream."""
    folder = tmp_path_factory.mktemp("recorded-cache")
    record = folder / "record.parquet"
    with two_engines() as engines, running_proxy(engines[0], write_keys(folder / "keys.toml"), upstreams=tuple(engines), slots=2,
                                                 record=record, placement="prefix", events_token=EVENTS_TOKEN) as proxy:
        conversations(proxy.url)
        events = read_events(proxy.url, EVENTS_TOKEN)
    return record, events


def said(rows: list[dict[str, Any]], kind: str, name: str) -> dict[str, int | None]:
    """What each request's row of ``kind`` says in ``name`` (a log's rows, or a stream's events)."""
    return {r["request_id"]: r.get(name) for r in rows if r["kind"] == kind}


def figures(placements: Placements) -> Figures:
    """Per upstream at the end: requests placed, the tokens predicted there and those found cached."""
    return {f.name: (f.placed, f.predicted, f.cached) for f in placements.at(sys.maxsize)}


def live_figures(events: list[dict[str, Any]]) -> Figures:
    """The placement figures of the stream's events as the live source reads them: its JSON reader, then ArrowBatcher."""
    table = EventTable("sfq")
    table.append(ArrowBatcher().convert(EventStream._table([json.dumps(e) for e in events])))
    return figures(table.placements)


def opened(path: Path) -> Figures:
    """The placement figures of the dashboard's table of ``path`` (a recording, replayed as it ran; or a log), as `sfqtui replay` opens it."""
    return figures(Run(_opening(path, "sfq", NO_CHOICES)).load_all().table.placements)


def test_a_replay_as_it_ran_carries_the_recorded_predictions_and_cached_tokens_as_the_stream_did(recorded: Recorded, tmp_path: Path,
                                                                                                  cli: CliRunner) -> None:
    record, events = recorded
    out = tmp_path / "log.parquet"
    run(cli, "simulate", str(record), "-o", str(out))
    rows = pl.read_parquet(out).to_dicts()
    predicted, cached = said(events, "dispatch", "predicted_cached_tokens"), said(events, "complete", "cached_tokens")
    assert len(predicted) == len(cached) == 12
    assert sum(v or 0 for v in predicted.values()) > 0 and sum(v or 0 for v in cached.values()) > 0  # the index and the caches had hits
    assert said(rows, "dispatch", "predicted_cached_tokens") == predicted
    assert said(rows, "complete", "cached_tokens") == cached
    for kind in ("arrive", "start"):  # nowhere else
        assert {r.get("predicted_cached_tokens") for r in rows if r["kind"] == kind} | {r.get("cached_tokens") for r in rows if r["kind"] == kind} == {None}
    # The dashboard's figures per upstream: the live stream's, for the recording replayed and for its saved log.
    live = live_figures(events)
    assert len(live) == 2 and sum(placed for placed, _, _ in live.values()) == 12
    assert all(p is not None and c is not None for _, p, c in live.values())
    assert opened(record) == live
    assert opened(out) == live


def test_a_what_if_carries_neither(recorded: Recorded, tmp_path: Path, cli: CliRunner) -> None:
    record, _ = recorded
    out = tmp_path / "what-if.parquet"
    for args in what_ifs(cli, record, out, ["--slots", "3"], ["--reprice"], ["--engines", "2"]):
        columns = pl.read_parquet_schema(out)
        assert "predicted_cached_tokens" not in columns, args
        # The engine model's caches say their own cached tokens, on start rows; the recording's are not a what-if's.
        if "cached_tokens" in columns:
            log = pl.read_parquet(out)
            assert log.filter(pl.col("cached_tokens").is_not_null())["kind"].unique().to_list() == ["start"], args
