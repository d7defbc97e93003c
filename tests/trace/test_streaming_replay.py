"""A replay read a chunk at a time equals the replay of the whole trace, event for event and
row for row in the written log; validation that streams through the file refuses exactly
what it refused before, with the same messages, wherever the batches fall."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import EventColumns
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.chunks import WholeTrace
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers import SCHEDULERS
from sfqtui.errors import InputError
from sfqtui.trace import load
from sfqtui.trace.chunks import open_trace
from sfqtui.trace.eventlog import EventLogWriter
from sfqtui.trace.load import load_trace, validate
from sfqtui.trace.simulate import simulate
from tests.trace.test_bad_inputs import CASES

TRACES = Path(__file__).resolve().parents[2] / "traces"
USERS = ["a", "b", "c", "d"]


@dataclass(frozen=True)
class Sliced:
    """An in-memory trace as RequestChunks of ``rows`` requests each."""

    whole: Trace
    rows: int

    @property
    def users(self) -> list[str]:
        return list(self.whole.users)

    @property
    def upstreams(self) -> list[str]:
        return list(self.whole.upstreams)

    @property
    def columns(self) -> frozenset[str]:
        return self.whole.columns

    def __len__(self) -> int:
        return len(self.whole)

    def weights_by_code(self) -> dict[int, float]:
        return self.whole.weights_by_code()

    def chunks(self) -> Iterator[WholeTrace]:
        t = self.whole
        for start in range(0, len(t), self.rows):
            yield WholeTrace(self._part(slice(start, start + self.rows)), start)

    def _part(self, rows: slice) -> Trace:
        t = self.whole

        def cut(column: Any) -> Any:
            return None if column is None else column[rows]

        return Trace(
            request_id=list(t.request_id)[rows], user=cut(t.user), users=t.users,
            arrival_s=cut(t.arrival_s), input_tokens=cut(t.input_tokens), max_tokens=cut(t.max_tokens),
            output_tokens=cut(t.output_tokens), cost=cut(t.cost), service_s=cut(t.service_s),
            model=cut(t.model), models=t.models, weights=t.weights,
        )


@st.composite
def token_traces(draw: st.DrawFn) -> Trace:
    """Random traces with token columns, and sometimes cost, service_s, weights and models."""
    n = draw(st.integers(1, 40))

    def column(values: st.SearchStrategy, optional: bool = True) -> list | None:
        if optional and draw(st.integers(0, 3)) == 0:
            return None
        return draw(st.lists(values, min_size=n, max_size=n))

    caps = column(st.one_of(st.just(-1), st.integers(1, 400)))
    weights = draw(st.dictionaries(st.sampled_from(USERS), st.sampled_from([0.5, 2.0, 4.0]), max_size=4))
    return Trace(
        request_id=[f"q{k}" for k in range(n)],
        user=draw(st.lists(st.sampled_from(USERS), min_size=n, max_size=n)),
        arrival_s=sorted(x / 4 for x in draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))),
        input_tokens=column(st.integers(0, 300), optional=False),
        max_tokens=caps,
        output_tokens=column(st.one_of(st.just(-1), st.integers(0, 400))),
        cost=column(st.integers(1, 40).map(float)),
        service_s=column(st.sampled_from([0.25, 0.5, 1.0, 3.0])),
        model=column(st.sampled_from([None, "m1", "m2"])),
        weights=weights,
    )


ESTIMATORS = st.builds(EstimatorParams, scope=st.sampled_from(["global", "model", "user"]),
                       update=st.sampled_from(["window", "ema", "cumulative"]), window=st.integers(1, 5),
                       oracle=st.sampled_from([False, False, False, True]))


def replayed(requests: Trace | Sliced, config: ReplayConfig, every: int | None = None) -> EventColumns | str:
    """Every event, all at once or gathered from ``chunks(every)``; the refusal's text if the replay is refused."""
    try:
        replay = Replay(requests, config)
        if every is None:
            return replay.run_all()
        parts = [columns for columns, _ in replay.chunks(every)]
    except ValueError as exc:
        return str(exc)
    fields: tuple[str, ...] = ("t", "kind", "req", "cost", "v", "meter", "deficit", "credit", "ratio", "est_output")
    fields += ("upstream", "limit", "reason") if config.engine is not None else ()
    joined = {f: [x for p in parts for x in (getattr(p, f) or [None] * len(p))] for f in fields}
    if all(p.ratio is None for p in parts):
        joined["ratio"] = joined["est_output"] = None  # type: ignore[assignment]  # no estimator priced it: both columns are absent
    return EventColumns(0, **joined)


def plain(columns: EventColumns | str) -> object:
    if isinstance(columns, str):
        return columns
    return {f: list(v) if v is not None else None for f, v in vars(columns).items() if f != "start"}


@settings(max_examples=300, deadline=None)
@given(token_traces(), st.integers(1, 4), st.integers(1, 6), st.sampled_from(SCHEDULERS), ESTIMATORS,
       st.sampled_from([None, None, 1, 3]), st.sampled_from([None, 2, 7]))
@pytest.mark.long
def test_chunked_replay_is_the_whole_replay(trace: Trace, slots: int, rows: int, scheduler: str, estimator: EstimatorParams,
                                            renormalise: int | None, every: int | None) -> None:
    config = ReplayConfig(scheduler, slots, estimator=estimator, renormalise_every=renormalise)
    assert plain(replayed(Sliced(trace, rows), config, every)) == plain(replayed(trace, config))


# An engine with room for every drawn request (prompt 300 and output 400 at most), two places and steps of whole quarters.
SMALL_ENGINE = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)


@settings(max_examples=150, deadline=None)
@given(token_traces(), st.integers(1, 4), st.integers(1, 6), st.sampled_from(SCHEDULERS), st.integers(1, 3),
       st.sampled_from([None, 2, 7]))
def test_chunked_replay_on_the_engine_model_is_the_whole_replay(trace: Trace, slots: int, rows: int, scheduler: str,
                                                                engines: int, every: int | None) -> None:
    config = ReplayConfig(scheduler, slots, engine=EngineSettings(SMALL_ENGINE, engines))
    assert plain(replayed(Sliced(trace, rows), config, every)) == plain(replayed(trace, config))


@settings(max_examples=40, deadline=None)
@given(token_traces(), st.integers(1, 3), st.integers(1, 4), st.sampled_from([None, 5.0, 100.0]))
def test_drr_default_quantum_is_found_across_chunks(trace: Trace, slots: int, rows: int, quantum: float | None) -> None:
    config = ReplayConfig("drr", slots, quantum=quantum)
    whole, sliced = Replay(trace, config), Replay(Sliced(trace, rows), config)
    assert whole.quantum == sliced.quantum
    assert plain(sliced.run_all()) == plain(whole.run_all())


@pytest.mark.parametrize("engine", [None, EngineSettings(EngineModel(), engines=16)], ids=["fixed service", "engine model"])
def test_every_chunk_leaves_the_window_and_few_are_held_at_once(engine: EngineSettings | None) -> None:
    source = open_trace(TRACES / "production-20k.parquet", chunk_rows=256)
    replay = Replay(source, ReplayConfig("sfq", 64, engine=engine))
    most = 0
    for drained in replay.drained(chunk=2000):
        most = max(most, len(drained.requests))
    chunks = len(replay.window.traces)
    assert chunks == len(source) // 256 + 1
    assert all(t is None for t in replay.window.traces)
    assert most <= chunks // 3  # about what requests in the system span (up to 5,000 here)


def logs_equal(a: Path, b: Path) -> bool:
    meta_a, meta_b = (json.loads(pq.read_schema(p).metadata[b"sfqtui"]) for p in (a, b))
    return pl.read_parquet(a).equals(pl.read_parquet(b)) and pq.read_schema(a) == pq.read_schema(b) and meta_a == meta_b


@pytest.mark.long
@pytest.mark.parametrize("trace", sorted(p.name for p in TRACES.glob("*.parquet")))
def test_streamed_log_is_the_whole_log(trace: str, tmp_path: Path) -> None:
    """Every scheduler on every bundled trace: the log written from chunks of 97 requests is the one written from the whole trace."""
    loaded = load_trace(TRACES / trace)
    source = open_trace(TRACES / trace, chunk_rows=97)
    for scheduler in SCHEDULERS:
        config = ReplayConfig(scheduler, loaded.suggested_slots or 2)
        try:
            simulate(loaded, config, tmp_path / "whole.parquet")
        except ValueError:
            with pytest.raises(ValueError):
                simulate(source, config, tmp_path / "chunks.parquet")
            continue
        simulate(source, config, tmp_path / "chunks.parquet")
        assert logs_equal(tmp_path / "whole.parquet", tmp_path / "chunks.parquet"), scheduler


def test_estimated_dispatches_carry_what_priced_them(tmp_path: Path) -> None:
    """The ratio and estimate in the log are those the engine hands over with the dispatches."""
    config = ReplayConfig("sfq", 4, estimator=EstimatorParams(scope="user", window=20))
    simulate(open_trace(TRACES / "calibration.parquet", chunk_rows=50), config, tmp_path / "log.parquet")
    log = pl.read_parquet(tmp_path / "log.parquet")
    columns = Replay(load_trace(TRACES / "calibration.parquet").trace, config).run_all()
    assert log["ratio"].to_list() == list(columns.ratio)  # type: ignore[arg-type]  # the estimator priced this replay
    assert log["est_output"].to_list() == list(columns.est_output)  # type: ignore[arg-type]  # the estimator priced this replay
    assert log.filter(pl.col("kind") == "dispatch")["est_output"].null_count() == 0


def test_an_unsorted_file_is_sorted_before_it_is_replayed(tmp_path: Path) -> None:
    shuffled = tmp_path / "shuffled.parquet"
    frame = pl.read_parquet(TRACES / "demo.parquet")
    order = list(range(frame.height))
    random.Random(3).shuffle(order)
    pq.write_table(frame[order].to_arrow().replace_schema_metadata(pq.read_schema(TRACES / "demo.parquet").metadata), shuffled)
    source = open_trace(shuffled, chunk_rows=10)
    assert not source.summary.in_order and open_trace(TRACES / "demo.parquet").summary.in_order
    simulate(load_trace(shuffled), ReplayConfig("sfq", 3), tmp_path / "whole.parquet")
    simulate(source, ReplayConfig("sfq", 3), tmp_path / "chunks.parquet")
    assert logs_equal(tmp_path / "whole.parquet", tmp_path / "chunks.parquet")


def refusal(path: Path, batch_rows: int) -> str | None:
    try:
        validate(path, batch_rows)
    except InputError as exc:
        return str(exc)
    return None


MORE_CASES = {
    "null arrival opening a batch": ({**CASES["NaN arrival"][0], "arrival_s": [0.0, None, 2.0]}, "column 'arrival_s', row 1"),
    "a later rule on an earlier row": ({**CASES["NaN arrival"][0], "input_tokens": [-1, 2, 3], "user": ["a", "b", None]},
                                       "column 'user', row 2"),
}


@pytest.mark.parametrize("case", sorted(CASES) + sorted(MORE_CASES))
def test_refusals_do_not_depend_on_the_batches(case: str, tmp_path: Path) -> None:
    data, expected = CASES.get(case) or MORE_CASES[case]
    trace = tmp_path / "bad.parquet"
    pl.DataFrame(data).write_parquet(trace)
    message = refusal(trace, 1 << 17)
    assert message is not None and expected in message
    assert refusal(trace, 1) == refusal(trace, 2) == message


BIG = 5000


def big_trace(path: Path, **changes: dict[int, object]) -> Path:
    """A good trace of BIG rows in several row groups, with ``changes`` as {column: {row: value}}."""
    data: dict[str, list] = {
        "request_id": [f"r{k}" for k in range(BIG)], "user": [f"u{k % 7}" for k in range(BIG)],
        "arrival_s": [k / 10 for k in range(BIG)], "input_tokens": [1 + k % 50 for k in range(BIG)],
        "weight": [1.0 + k % 7 for k in range(BIG)],
    }
    for column, rows in changes.items():
        for row, value in rows.items():
            data[column][row] = value
    pl.DataFrame(data).write_parquet(path, row_group_size=1000)
    return path


@pytest.mark.parametrize("changes, expected", [
    ({}, None),
    ({"request_id": {4321: "r17"}}, "column 'request_id', row 4321 (counting from 0): value 'r17'; request_id must be unique"),
    ({"weight": {4000: 9.0}}, "column 'weight', row 4000 (counting from 0): value 9.0; a user's weight must be the same"),
    ({"input_tokens": {30: -1}, "user": {4999: None}}, "column 'user', row 4999 (counting from 0): value null; user is required"),
    ({"arrival_s": {2500: 0.0}}, None),
])
def test_rules_that_span_batches(changes: dict[str, dict[int, object]], expected: str | None, tmp_path: Path) -> None:
    trace = big_trace(tmp_path / "t.parquet", **changes)
    for batch_rows in (333, 1000, 1 << 17):
        message = refusal(trace, batch_rows)
        assert (message is None) if expected is None else (message is not None and expected in message)


def test_in_order_is_told_across_batch_boundaries(tmp_path: Path) -> None:
    assert validate(big_trace(tmp_path / "sorted.parquet"), 333).in_order
    assert not validate(big_trace(tmp_path / "unsorted.parquet", arrival_s={1000: 99.0}), 1000).in_order


def test_a_hash_collision_never_refuses_a_good_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "request_id_hashes", lambda batch: np.zeros(batch.height, dtype=np.uint64))
    assert validate(big_trace(tmp_path / "good.parquet"), 1000).rows == BIG
    message = refusal(big_trace(tmp_path / "dup.parquet", request_id={3000: "r2999"}), 1000)
    assert message is not None and "row 3000 (counting from 0): value 'r2999'" in message


def test_a_failed_row_group_write_is_raised_and_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "log.parquet"
    with pytest.raises(ValueError), EventLogWriter(out, {}) as writer:
        writer.write(pa.table({"seq": [0, 1]}))
        writer.write(pa.table({"seq": ["not", "ints"]}))  # the writing thread fails on this one
        writer.write(pa.table({"seq": [4, 5]}))
    assert list(tmp_path.iterdir()) == []


def test_the_service_model_falls_back_to_the_cap_then_the_default_when_output_is_unknown() -> None:
    """Token columns hold -1 for null: an unknown output is served as its max_tokens, or the default."""
    from sfqtui.core.pricing.service import TokenServiceModel
    from sfqtui.core.requests.trace import Trace

    model = TokenServiceModel()
    trace = Trace(request_id=["a", "b", "c"], user=["u", "u", "u"], arrival_s=[0.0, 0.0, 0.0],
                  input_tokens=[100, 100, None], max_tokens=[400, None, None], output_tokens=[None, None, 10])
    a, b, c = model.times(trace)
    assert a == model.overhead_s + 100 / model.prefill_tps + 400 / model.decode_tps
    assert b == model.overhead_s + 100 / model.prefill_tps + model.default_output_tokens / model.decode_tps
    assert c == model.overhead_s + 10 / model.decode_tps


def test_only_dispatch_rows_have_a_cost_and_a_credit_in_the_log(tmp_path: Path) -> None:
    simulate(load_trace(TRACES / "calibration.parquet"), ReplayConfig("drr", 4), tmp_path / "log.parquet")
    log = pl.read_parquet(tmp_path / "log.parquet")
    dispatches, others = log.filter(pl.col("kind") == "dispatch"), log.filter(pl.col("kind") != "dispatch")
    assert len(dispatches) and len(others)
    assert dispatches["cost"].null_count() == dispatches["credit"].null_count() == 0
    assert others["cost"].null_count() == others["credit"].null_count() == len(others)


def test_a_log_reads_back_as_strings_with_its_metadata_and_its_row_groups_bounded_by_seq_and_time(tmp_path: Path) -> None:
    """The encoder hands the writer its names as codes (kind, scheduler, user); the file still
    holds plain strings for every reader, keeps the replay's metadata, and bounds a row group's
    seq and t so a reader can skip to a range."""
    out = tmp_path / "log.parquet"
    simulate(open_trace(TRACES / "calibration.parquet", chunk_rows=50), ReplayConfig("sfq", 4), out)
    schema = pq.read_schema(out)
    assert all(schema.field(name).type == pa.string() for name in ("kind", "scheduler", "request_id", "user"))
    assert json.loads(schema.metadata[b"sfqtui"])["scheduler"] == "sfq"
    log = pl.read_parquet(out)
    assert log.schema["user"] == pl.String and set(log["kind"].unique()) >= {"arrive", "dispatch", "complete"}
    group = pq.ParquetFile(out).metadata.row_group(0)
    seq, t = (group.column(schema.get_field_index(name)).statistics for name in ("seq", "t"))
    assert (seq.min, seq.max) == (0, len(log) - 1) and (t.min, t.max) == (log["t"].min(), log["t"].max())
