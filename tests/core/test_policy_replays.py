"""The policies of semantics §15 in a replay: the trace's policy columns reach them, what they
promise holds on the bundled traces, and the figures issue 33 asks for."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.audit import PolicyLog, audit
from sfqtui.core.analysis.fairness import fairness_of_replay
from sfqtui.core.events import DISPATCH
from sfqtui.core.log.rows import rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers.policy import PolicyOptions
from tests.cli.test_replay_refuses import refused

POLICIES = ("llm-d", "dynamo", "litellm", "las")


def backlogged(n: int = 400) -> Trace:
    """Two users backlogged from t = 0: long sends 2,000-token prompts, short 100-token ones."""
    users = ["long", "short"] * n
    return Trace(request_id=[f"r{k}" for k in range(2 * n)], user=users, arrival_s=[0.0] * (2 * n),
                 input_tokens=[2000 if u == "long" else 100 for u in users], max_tokens=[50] * (2 * n), output_tokens=[50] * (2 * n))


@pytest.mark.parametrize(("scheduler", "low", "high"), [("llm-d", 0.80, 1.0), ("sfq", 0.40, 0.60), ("las", 0.40, 0.60)])
def test_round_robin_is_fair_in_requests_not_in_tokens(scheduler: str, low: float, high: float) -> None:
    report = fairness_of_replay(backlogged(), ReplayConfig(scheduler, 4))
    assert low <= report.share("long") <= high, report.share("long")


def priorities(n: int = 60) -> Trace:
    """Three users backlogged from t = 0 at priorities 10, 0 and 5, with a flow and a class each."""
    users = ["hi", "lo", "mid"] * n
    level = {"hi": 10, "lo": 0, "mid": 5}
    return Trace(request_id=[f"r{k}" for k in range(3 * n)], user=users, arrival_s=[0.0] * (3 * n),
                 input_tokens=[100] * (3 * n), max_tokens=[10] * (3 * n), priority=[level[u] for u in users],
                 flow=[f"f-{u}" for u in users], policy_class=["gold" if u == "lo" else "free" for u in users])


@pytest.mark.parametrize(("scheduler", "order"), [("llm-d", ["hi", "mid", "lo"]), ("dynamo", ["hi", "mid", "lo"]),
                                                  ("litellm", ["lo", "mid", "hi"])])
def test_priorities_are_strict_in_the_direction_each_project_documents(scheduler: str, order: list[str]) -> None:
    trace = priorities()
    columns = Replay(trace, ReplayConfig(scheduler, 2)).run_all()
    served = [trace.user_name(req) for kind, req in zip(columns.kind, columns.req) if kind == DISPATCH]
    assert served == [user for user in order for _ in range(60)]


@pytest.mark.parametrize("scheduler", POLICIES)
def test_a_replay_with_policy_columns_passes_its_audit(scheduler: str) -> None:
    trace = priorities()
    report = audit(rows_from_replay(Replay(trace, ReplayConfig(scheduler, 3)).run_all(), trace, scheduler))
    assert report.ok, report.violations


def test_the_audit_finds_a_priority_served_out_of_turn() -> None:
    # llm-d's log read as LiteLLM's: the lowest priority number was served last, not first.
    trace = priorities()
    report = audit(rows_from_replay(Replay(trace, ReplayConfig("llm-d", 2)).run_all(), trace, "litellm"))
    assert not report.ok and {v.rule for v in report.violations} == {"priorities"}


def write(tmp_path: Path, **extra: list[str | None]) -> Path:
    data: dict[str, Sequence[object]] = {"request_id": ["r1", "r2", "r3"], "user": ["a", "b", "a"], "arrival_s": [0.0, 0.0, 1.0],
                                     "input_tokens": [10, 20, 30]}
    data.update(extra)
    path = tmp_path / "trace.parquet"
    pl.DataFrame(data).write_parquet(path)
    return path


def test_bad_combinations_get_one_line_and_exit_2(tmp_path: Path, cli: CliRunner) -> None:
    trace = write(tmp_path, **{"class": ["gold", None, "free"]})
    out = str(tmp_path / "log.parquet")
    assert "classes: free, gold" in refused(cli, "simulate", str(trace), "-o", out, "-s", "dynamo", "--class-weights", "gold=2,silver=1")
    assert "needs the trace column 'class'" in refused(cli, "simulate", str(write(tmp_path)), "-o", out, "-s", "dynamo", "--class-weights", "a=1")
    assert "deadline_s" in refused(cli, "simulate", str(trace), "-o", out, "-s", "llm-d", "--ordering", "edf")
    assert "share sync" in refused(cli, "simulate", str(trace), "-o", out, "-s", "llm-d", "--replicas", "2", "--share", "sync:5")
    assert "CLASS=WEIGHT" in refused(cli, "simulate", str(trace), "-o", out, "-s", "dynamo", "--class-weights", "gold")
    assert "half-life" in refused(cli, "simulate", str(trace), "-o", out, "-s", "las", "--half-life", "0")
    assert "--ordering edf is llm-d's option" in refused(cli, "simulate", str(trace), "-o", out, "-s", "sfq", "--ordering", "edf")
    assert "--class-weights is dynamo's option" in refused(cli, "compare", str(trace), "--schedulers", "sfq,llm-d", "--class-weights", "gold=2")


def test_dynamo_weights_share_tokens_between_classes() -> None:
    # Two classes backlogged with equal requests: gold at weight 3 gets three quarters of the tokens.
    n = 400
    users = ["g", "f"] * n
    trace = Trace(request_id=[f"r{k}" for k in range(2 * n)], user=users, arrival_s=[0.0] * (2 * n), input_tokens=[500] * (2 * n),
                  max_tokens=[10] * (2 * n), policy_class=["gold" if u == "g" else "free" for u in users])
    config = ReplayConfig("dynamo", 4, policy=PolicyOptions(class_weights=(("gold", 3.0),)))
    assert 0.70 <= fairness_of_replay(trace, config).share("g") <= 0.80


def test_the_audit_finds_a_flow_skipped_in_its_turn() -> None:
    # LiteLLM's log (first come, first served, one priority) read as llm-d's: a's three requests went before b's first.
    trace = Trace(request_id=["a1", "a2", "a3", "b1"], user=["a", "a", "a", "b"], arrival_s=[0.0, 0.0, 0.0, 0.0], input_tokens=[10] * 4)
    rows = rows_from_replay(Replay(trace, ReplayConfig("litellm", 1)).run_all(), trace, "llm-d")
    assert {v.rule for v in audit(rows, policy=PolicyLog(flows_are_users=True)).violations} == {"turns"}
    assert audit(rows).ok  # flows not known to be users: turns are not checked


TRACES = sorted((Path(__file__).resolve().parents[2] / "traces").glob("*.parquet"))


@pytest.mark.parametrize("trace", TRACES, ids=lambda path: path.stem)
def test_compare_runs_the_policies_on_every_bundled_trace(trace: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["compare", str(trace), "--schedulers", "sfq,llm-d,dynamo,litellm,las", "--json"])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["schedulers"]) == ["sfq", "llm-d", "dynamo", "litellm", "las"]


def test_explain_words_each_rule(tmp_path: Path, cli: CliRunner) -> None:
    # hi (band 10) and lo (band 0) wait from t = 0; mid joins band 10 while h1 is served, and takes the next turn there.
    path = tmp_path / "bands.parquet"
    pl.DataFrame({"request_id": ["h1", "h2", "l1", "m1"], "user": ["hi", "hi", "lo", "mid"], "arrival_s": [0.0, 0.0, 0.0, 0.5],
                  "input_tokens": [10, 10, 10, 10], "service_s": [1.0] * 4, "priority": [10, 10, 0, 10]}).write_parquet(path)
    said = {rid: cli.invoke(app, ["explain", str(path), rid, "-s", "llm-d"]).stdout for rid in ("h1", "m1", "l1")}
    assert "round-robin: flow mid's turn in band 10" in said["m1"]
    assert "band 10 before band 0: hi holds the highest band waiting" in said["h1"]
    assert "why:" in said["l1"]


def test_the_audit_bounds_a_dynamo_class_s_credit() -> None:
    # A replay holds the bound it records; the same log against a bound it passes is refused.
    trace = priorities()
    replay = Replay(trace, ReplayConfig("dynamo", 2))
    rows = rows_from_replay(replay.run_all(), trace, "dynamo")
    assert replay.plan.credit_bound == 1024 + 100
    assert audit(rows, policy=PolicyLog(credit_bound=replay.plan.credit_bound)).ok
    report = audit(rows, policy=PolicyLog(credit_bound=100))
    assert {v.rule for v in report.violations} == {"credit"} and "not below the bound 100" in report.violations[0].message
