"""The audit and the fairness figures read a log chunk by chunk and find what they find on the whole log."""

import dataclasses
import random
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.audit import StructureRules, audit
from sfqtui.core.analysis.fairness import FairnessTally, fairness, fairness_of_replay
from sfqtui.core.analysis.gaps import Ranked
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.errors import InputError
from sfqtui.scenarios import SCENARIOS, generate
from sfqtui.trace.eventlog import iter_log_rows, log_rows, read_log
from sfqtui.trace.load import normalise, to_core
from tests.helpers import replay, trace_of

COLUMNS = [f.name for f in dataclasses.fields(LogRows) if f.name != "scheduler"]


def chunks(log: LogRows, cuts: list[int]) -> list[LogRows]:
    """The log cut before each position in ``cuts``."""
    bounds = [0, *sorted(set(cuts)), len(log)]
    return [
        LogRows(log.scheduler, **{c: None if getattr(log, c) is None else getattr(log, c)[a:b] for c in COLUMNS})  # type: ignore[arg-type]  # columns by name
        for a, b in zip(bounds, bounds[1:])
    ]


def scenario_log(name: str, scheduler: str) -> LogRows:
    trace = to_core(normalise(generate(name, seed=5)))
    return replay(trace, scheduler, slots=SCENARIOS[name].slots)


def tampered(log: LogRows, column: str, at: int, value: object) -> LogRows:
    values = list(getattr(log, column))
    values[at] = value
    return dataclasses.replace(log, **{column: values})  # type: ignore[arg-type]  # a column by name: mypy sees every field's type at once


def audit_figures(log: LogRows | list[LogRows]) -> tuple:
    """Everything an audit reports, of a whole log or of its chunks."""
    report = audit(iter(log) if isinstance(log, list) else log)
    return (report.events, report.users, report.dispatches, report.c_max, report.checks, report.violations,
            report.violation_count, report.upper_margin, report.lower_margin, report.worst_gap)


@pytest.mark.parametrize("scheduler", ["sfq", "sfq-reset", "drr", "rr"])
@pytest.mark.parametrize("name", ["demo", "trickle", "heavy-vs-light", "weighted"])
def test_chunks_give_the_same_audit_and_fairness(name: str, scheduler: str) -> None:
    log = scenario_log(name, scheduler)
    rng = random.Random(f"{name}/{scheduler}")
    for cuts in ([1], [len(log) - 1], rng.sample(range(1, len(log)), 7)):
        assert audit_figures(chunks(log, cuts)) == audit_figures(log)
        assert fairness(iter(chunks(log, cuts))).as_dict() == fairness(log).as_dict()


def test_chunks_list_the_same_violations_as_the_whole_log() -> None:
    log = scenario_log("demo", "sfq")
    dispatches = [k for k, kind in enumerate(log.kind) if kind == "dispatch"]
    for at in dispatches[3:60:2]:
        log = tampered(log, "meter", at, log.meter[at] + 1.0)  # type: ignore[operator]  # row at is a dispatch: it has a meter
    log = tampered(log, "seq", 5, 50)
    whole = audit(log)
    assert whole.violation_count > len(whole.violations) == 20
    assert audit_figures(chunks(log, list(range(1, len(log), 17)))) == audit_figures(log)


def test_an_empty_iterable_is_an_empty_report() -> None:
    report = audit(iter([]))
    assert (report.scheduler, report.events, report.ok) == ("unknown", 0, True)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 20), st.sampled_from([1.0, 2.0, 5.0, 40.0])), min_size=1, max_size=60),
       st.integers(1, 4), st.randoms(use_true_random=False))
def test_chunked_fairness_of_random_traces(rows: list[tuple[str, float, float]], slots: int, rng: random.Random) -> None:
    trace = trace_of(rows, weights={"a": 2.0})
    log = replay(trace, "sfq", slots)
    cuts = rng.sample(range(1, len(log)), min(len(log) - 1, 5))
    whole, parts = fairness(log, trace.weights), fairness(iter(chunks(log, cuts)), trace.weights)
    assert parts.as_dict() == whole.as_dict()
    assert {u: list(f.waits) for u, f in parts.users.items()} == {u: list(f.waits) for u, f in whole.users.items()}


def test_fairness_of_replay_streams_what_the_whole_log_gives() -> None:
    trace = to_core(normalise(generate("production", seed=2, requests=4000, users=30)))
    config = ReplayConfig("sfq", 4)
    whole = fairness(rows_from_replay(Replay(trace, config).run_all(), trace, "sfq"), trace.weights)
    arrived: list[int] = []
    streamed = fairness_of_replay(trace, config, arrived.append)
    assert streamed.as_dict() == whole.as_dict()
    assert arrived[-1] == len(trace)


def test_finished_requests_leave_no_bookkeeping() -> None:
    log = scenario_log("demo", "sfq")
    structure = StructureRules()
    tally = FairnessTally()
    for part in chunks(log, list(range(1, len(log), 50))):
        structure.feed(part)
        tally.feed(part)
    assert structure.stage == {} and tally.arrived == {}


def test_ranked_reads_like_a_stable_sort() -> None:
    rng = random.Random(3)
    values = [float(rng.choice([0, 1, 2, 2, 5, 9])) for _ in range(500)]
    expected = sorted(range(len(values)), key=lambda k: -values[k])
    ranked = Ranked(values, batch=3)
    assert ranked.first(10) == expected[:10]
    assert list(ranked) == expected
    assert list(Ranked([])) == []


@pytest.fixture
def demo_log(tmp_path: Path) -> Path:
    cli = CliRunner()
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    assert cli.invoke(app, ["gen", "demo", "-o", str(trace)]).exit_code == 0
    assert cli.invoke(app, ["simulate", str(trace), "-o", str(log)]).exit_code == 0
    return log


def test_iter_log_rows_reads_the_log_in_batches(demo_log: Path) -> None:
    whole = log_rows(read_log(demo_log)[0])
    batches = list(iter_log_rows(demo_log, batch_rows=64))
    assert len(batches) > 1 and max(len(b) for b in batches) <= 64
    for column in ("seq", "t", "kind", "user", "request_id", "cost", "v", "meter", "output_tokens"):
        assert [x for b in batches for x in getattr(b, column)] == list(getattr(whole, column))
    assert audit_figures(batches) == audit_figures(whole)


def test_iter_log_rows_refuses_a_log_of_two_schedulers(demo_log: Path, tmp_path: Path) -> None:
    df = pl.read_parquet(demo_log)
    mixed = tmp_path / "mixed.parquet"
    last_is_drr = pl.when(pl.int_range(pl.len()) == len(df) - 1).then(pl.lit("drr")).otherwise(pl.col("scheduler"))
    df.with_columns(last_is_drr.alias("scheduler")).write_parquet(mixed, row_group_size=100)
    with pytest.raises(InputError, match="one scheduler's events; this one has \\['drr', 'sfq'\\]"):
        iter_log_rows(mixed)
    empty = tmp_path / "empty.parquet"
    df.head(0).write_parquet(empty)
    with pytest.raises(InputError, match="this one has none"):
        iter_log_rows(empty)


def test_check_finds_violations_across_batches(demo_log: Path, tmp_path: Path) -> None:
    df = pl.read_parquet(demo_log)
    bad = tmp_path / "bad.parquet"
    target = df.with_row_index("k").filter((pl.col("kind") == "dispatch") & (pl.col("k") > 200))["k"][0]
    lowered = pl.when(pl.int_range(pl.len()) == target).then(pl.col("meter") - 1.0).otherwise(pl.col("meter"))
    df.with_columns(lowered.alias("meter")).write_parquet(bad, row_group_size=50)
    result = CliRunner().invoke(app, ["check", str(bad)])
    assert result.exit_code == 1
    assert f"seq {target}: [§3 charge]" in result.stdout
    assert audit_figures(list(iter_log_rows(bad, batch_rows=30))) == audit_figures(log_rows(read_log(bad)[0]))
