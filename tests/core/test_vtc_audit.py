"""`check` audits VTC logs (semantics §9): joins, picks and both charges are re-derived from the log."""

import dataclasses
import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.audit import audit
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.scenarios import generate
from sfqtui.trace.load import normalise, to_core
from sfqtui.trace.schema import METADATA_KEY


def small_trace() -> Trace:
    """b (weight 2) is charged a large output; c joins behind a and b and is lifted to the smaller counter."""
    return Trace(
        request_id=[f"r{k}" for k in range(7)],
        user=["a", "a", "b", "a", "c", "b", "c"],
        arrival_s=[0.0, 0.0, 0.0, 0.5, 1.0, 2.0, 2.5],
        input_tokens=[10, 20, 5, 10, 40, 5, 1],
        output_tokens=[5, 5, 50, 3, 2, None, 0],
        service_s=[1.0] * 7,
        weights={"b": 2.0},
    )


def vtc_log(trace: Trace, slots: int = 1) -> LogRows:
    return rows_from_replay(Replay(trace, ReplayConfig("vtc", slots)).run_all(), trace, "vtc")


def calibration_trace() -> Trace:
    return to_core(normalise(generate("calibration", seed=4)))


def rules_broken(log: LogRows, output_weight: float | None = None) -> set[str]:
    return {v.rule for v in audit(log, output_weight).violations}


def changed(log: LogRows, column: str, at: int, value: object) -> LogRows:
    values = list(getattr(log, column))
    values[at] = value
    return dataclasses.replace(log, **{column: values})  # type: ignore[arg-type]  # a column by name: mypy sees every field's type at once


def first(log: LogRows, kind: str, after: int = 0) -> int:
    return next(k for k in range(after, len(log)) if log.kind[k] == kind)


def test_the_small_trace_passes_and_its_counters_are_the_hand_computed_ones() -> None:
    log = vtc_log(small_trace())
    assert audit(log).ok
    counters = [(log.kind[k], log.user[k], log.meter[k]) for k in range(len(log)) if log.kind[k] != "arrive"]
    assert counters[:6] == [
        ("dispatch", "a", 10.0),    # 0 + 10 / 1
        ("complete", "a", 20.0),    # 10 + 2 * 5 / 1
        ("dispatch", "b", 2.5),     # 0 + 5 / 2
        ("complete", "b", 52.5),    # 2.5 + 2 * 50 / 2
        ("dispatch", "c", 40.0),    # c joined at 0 (b's counter), then + 40
        ("complete", "c", 44.0),
    ]


@pytest.mark.parametrize("slots", [1, 3, 8])
def test_replayed_vtc_logs_pass(slots: int) -> None:
    trace = calibration_trace()
    report = audit(vtc_log(trace, slots))
    assert report.ok, report.violations
    assert report.checks[-1][0] == ("§9", "§9 join", "§9 pick", "§9 charge")
    weighted = dataclasses.replace(trace, weights={trace.users[0]: 3.0, trace.users[1]: 0.5})
    assert audit(vtc_log(weighted, slots)).ok


def test_a_tampered_dispatch_charge_is_caught() -> None:
    log = vtc_log(calibration_trace(), 4)
    at = first(log, "dispatch", 100)
    assert rules_broken(changed(log, "meter", at, log.meter[at] + 1.0)) >= {"§9 charge"}  # type: ignore[operator]  # row at is a dispatch: it has a cost and a meter
    assert "§9 charge" in rules_broken(changed(log, "cost", at, log.cost[at] * 2))  # type: ignore[operator]  # row at is a dispatch: it has a cost and a meter


def test_a_tampered_completion_charge_is_caught() -> None:
    log = vtc_log(calibration_trace(), 4)
    at = first(log, "complete", 100)
    assert "§9 charge" in rules_broken(changed(log, "meter", at, log.meter[at] + 1.0))  # type: ignore[operator]  # row at is a dispatch: it has a meter
    assert "§9 charge" in rules_broken(log, output_weight=3.0)


def test_a_wrong_pick_is_caught() -> None:
    log = vtc_log(small_trace())
    at = first(log, "dispatch", 13)  # a is picked at counter 20 while c waits at 40 and b at 52.5
    assert log.user[at] == "a"
    assert "§9 pick" in rules_broken(changed(log, "user", at, "c"))


def test_a_join_without_the_lift_is_caught() -> None:
    log = vtc_log(small_trace())
    lifted = next(k for k in range(len(log)) if log.kind[k] == "arrive" and log.user[k] == "c" and log.meter[k] == 40.0)
    assert "§9 join" in rules_broken(changed(log, "meter", lifted, 30.0))
    new_user = first(log, "arrive")
    assert "§9 join" in rules_broken(changed(log, "meter", new_user, 1.0))


def test_nothing_else_moves_a_counter() -> None:
    log = vtc_log(small_trace())
    queued_again = 1  # a's second arrival, while its first request is queued
    assert "§9 join" in rules_broken(changed(log, "meter", queued_again, 5.0))
    reset = dataclasses.replace(log, kind=[*log.kind[:-1], "idle_reset"], user=[*log.user[:-1], None])
    assert "§9" in rules_broken(reset)


def test_without_output_tokens_a_completion_only_must_not_lower_the_counter() -> None:
    log = dataclasses.replace(vtc_log(calibration_trace(), 4), output_tokens=None)
    report = audit(log)
    assert report.ok and "no decrease" in report.checks[-1][1]
    at = first(log, "complete", 100)
    before = next(log.meter[k] for k in range(at - 1, -1, -1) if log.user[k] == log.user[at])
    assert "§9 charge" not in rules_broken(changed(log, "meter", at, before))  # as if the output were 0 tokens
    assert "§9 charge" in rules_broken(changed(log, "meter", at, before - 1.0))  # type: ignore[operator]  # row at is a dispatch: it has a cost and a meter


@pytest.fixture
def vtc_file(tmp_path: Path) -> Path:
    cli = CliRunner()
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    assert cli.invoke(app, ["gen", "calibration", "-o", str(trace)]).exit_code == 0
    assert cli.invoke(app, ["simulate", str(trace), "-s", "vtc", "-o", str(log)]).exit_code == 0
    return log


def test_check_passes_a_vtc_log(vtc_file: Path) -> None:
    result = CliRunner().invoke(app, ["check", str(vtc_file)])
    assert result.exit_code == 0, result.stdout
    assert "vtc log" in result.stdout and "[  ok] §9 join" in result.stdout


@pytest.mark.parametrize("kind,rule", [("dispatch", "§9 pick"), ("arrive", "§9 join")])
def test_check_fails_a_tampered_vtc_log(vtc_file: Path, kind: str, rule: str) -> None:
    df = pl.read_parquet(vtc_file)
    column, value = ("user", pl.lit("zed")) if kind == "dispatch" else ("meter", pl.col("meter") + 0.5)
    target = df.with_row_index("k").filter(pl.col("kind") == kind)["k"][2]
    bad = vtc_file.with_name("bad.parquet")
    df.with_columns(pl.when(pl.int_range(pl.len()) == target).then(value).otherwise(pl.col(column)).alias(column)).write_parquet(bad)
    result = CliRunner().invoke(app, ["check", str(bad)])
    assert result.exit_code == 1 and f"[{rule}]" in result.stdout


def test_check_charges_completions_with_the_output_weight_the_log_records(vtc_file: Path) -> None:
    table = pq.read_table(vtc_file)
    metadata = json.loads(table.schema.metadata[METADATA_KEY])
    metadata["estimator"] = {**metadata.get("estimator", {}), "output_weight": 3.0}
    other = vtc_file.with_name("b3.parquet")
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata).encode()}), other)
    result = CliRunner().invoke(app, ["check", str(other)])
    assert result.exit_code == 1 and "(b = 3)" in result.stdout and "[§9 charge]" in result.stdout
