"""A replay reaches the dashboard's table straight from the engine's packed rows: the
batches are those the Arrow path (the log writer's table, then ArrowBatcher) gives."""

from __future__ import annotations

from array import array
from pathlib import Path

import polars as pl
import pytest

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.log.table import EventBatch
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.trace.load import load_trace
from sfqtui.trace.replay_batches import replay_batches
from sfqtui.trace.simulate import encoder_for
from sfqtui.trace.sources import ArrowBatcher, value_column
from sfqtui.trace.write import write_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"


def through_arrow(trace: str | Path, config: ReplayConfig, chunk: int) -> list[EventBatch]:
    loaded = load_trace(TRACES / trace)  # an absolute path (a test's own file) stays as it is
    replay = Replay(loaded.trace, config)
    encoder = encoder_for(replay, loaded)
    batcher = ArrowBatcher(value_column(config.scheduler))
    batches = []
    for drained in replay.drained(chunk=chunk):
        if len(drained.rows):
            batches.append(batcher.convert(encoder.encode(drained)))
    return batches


def direct(trace: str | Path, config: ReplayConfig, chunk: int) -> list[EventBatch]:
    loaded = load_trace(TRACES / trace)
    return [batch for batch, _ in replay_batches(Replay(loaded.trace, config), loaded, value_column(config.scheduler), chunk)]


def plain(batch: EventBatch) -> dict[str, object]:
    """The batch's fields as lists, NaN as None (a NaN is never equal to itself)."""
    fields = {name: value for name, value in vars(batch).items() if name != "names"}
    out: dict[str, object] = {}
    for name, value in fields.items():
        if isinstance(value, array):
            out[name] = [None if x != x else x for x in value]
        elif isinstance(value, (list, tuple)):
            out[name] = list(value)
        else:
            out[name] = value
    out["names"] = [batch.names[code] for code in range(batch.requests)]
    return out


@pytest.mark.parametrize(("trace", "config"), [
    ("heavy-vs-light.parquet", ReplayConfig("sfq", 4)),
    ("heavy-vs-light.parquet", ReplayConfig("drr", 4, quantum=100.0)),
    ("calibration.parquet", ReplayConfig("vtc", 3)),
    ("calibration.parquet", ReplayConfig("sfq", 3)),
    ("weighted.parquet", ReplayConfig("fifo", 2)),
    ("heavy-vs-light.parquet", ReplayConfig("sfq", 5, replicas=ReplicaSettings(3, "least-loaded"))),
    ("calibration.parquet", ReplayConfig("sfq", 4, replicas=ReplicaSettings(2, "random", Share.parse("sync:5,1")))),
    ("heavy-vs-light.parquet", ReplayConfig("drr", 4, quantum=100.0, replicas=ReplicaSettings(2, "hash", Share("global")))),
    # engines that model their prefix caches: where each request was placed, and what its engine found cached
    ("multi-turn.parquet", ReplayConfig("sfq", 12, engine=EngineSettings(EngineModel(), 2, placement="prefix"))),
])
def test_a_replays_batches_are_those_of_its_log(trace: str, config: ReplayConfig) -> None:
    expected = [plain(b) for b in through_arrow(trace, config, 300)]
    assert len(expected) > 2
    assert [plain(b) for b in direct(trace, config, 300)] == expected
    if config.engine is not None:
        assert all(b["placed"] and b["cached"] for b in expected)


def test_a_replayed_recordings_batches_name_its_upstreams_as_its_log_does(tmp_path: Path) -> None:
    """A recording replayed as it ran: each request placed on the upstream it went to, by address, on both paths."""
    frame = pl.read_parquet(TRACES / "heavy-vs-light.parquet")
    upstreams = ["10.0.0.2:8000/v1", "10.0.0.1:8000/v1", None]
    record = tmp_path / "record.parquet"
    write_trace(frame.with_columns(pl.Series("upstream", [upstreams[k % 3] for k in range(frame.height)]),
                                   (pl.col("arrival_s") + 0.5).alias("engine_start_s")), record, {"source": "sfqtui proxy"})
    config = ReplayConfig("sfq", 4, as_recorded=True)
    expected = [plain(b) for b in through_arrow(record, config, 300)]
    assert [plain(b) for b in direct(record, config, 300)] == expected
    placed = {(code, name) for batch in expected for _, code, name, _ in batch["placed"]}  # type: ignore[attr-defined]  # a list of tuples
    assert {name for _, name in placed} == set(upstreams[:2])
    assert placed == {(k, upstreams[k % 3]) for k in range(frame.height) if k % 3 < 2}  # a request's code is its row: the trace is in order


def test_a_replayed_recordings_batches_carry_its_predictions_and_cached_tokens_as_its_log_does(tmp_path: Path) -> None:
    """A recording replayed as it ran: each dispatch with what the proxy's index predicted, each completion with what the
    upstream said it found cached, where the recording says, on both paths; a what-if carries neither."""
    frame = pl.read_parquet(TRACES / "heavy-vs-light.parquet")
    n = frame.height
    predicted = [None if k % 5 == 0 else 16 * (k % 4) for k in range(n)]
    cached = [None if k % 7 == 0 else 16 * (k % 3) for k in range(n)]
    record = tmp_path / "record.parquet"
    write_trace(frame.with_columns(pl.Series("upstream", ["10.0.0.2:8000/v1", "10.0.0.1:8000/v1"] * (n // 2) + ["10.0.0.1:8000/v1"] * (n % 2)),
                                   pl.Series("predicted_cached_tokens", predicted, pl.Int64), pl.Series("cached_tokens", cached, pl.Int64)),
                record, {"source": "sfqtui proxy"})
    config = ReplayConfig("sfq", 4, as_recorded=True)
    expected = [plain(b) for b in through_arrow(record, config, 300)]
    assert len(expected) > 2 and [plain(b) for b in direct(record, config, 300)] == expected
    said = {code: p for batch in expected for _, code, _, p in batch["placed"]}  # type: ignore[attr-defined]  # a list of tuples
    assert said == {k: -1 if p is None else p for k, p in enumerate(predicted)}  # a request's code is its row: the trace is in order
    found = {code: tokens for batch in expected for _, code, tokens in batch["cached"] or ()}  # type: ignore[attr-defined]  # likewise
    assert found == {k: c for k, c in enumerate(cached) if c is not None}
    what_if = [plain(b) for b in direct(record, ReplayConfig("sfq", 3), 300)]
    assert what_if == [plain(b) for b in through_arrow(record, ReplayConfig("sfq", 3), 300)]
    assert all(b["cached"] is None and not b["placed"] for b in what_if)
