"""`sfqtui explain`: what it says about a request agrees with the event log itself."""

import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app

TRACES = Path(__file__).resolve().parents[2] / "traces"
HEAVY = TRACES / "heavy-vs-light.parquet"


def invoke(cli: CliRunner, *args: str) -> tuple[int, str, str]:
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def explained(cli: CliRunner, *args: str) -> dict:
    code, out, err = invoke(cli, "explain", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def from_the_log(log: Path, request_id: str) -> dict:
    """The request's times and who went ahead of it (semantics §10), read from the log's rows directly."""
    rows = pl.read_parquet(log).sort("seq").to_dicts()
    mine = {row["kind"]: row for row in rows if row["request_id"] == request_id}
    arrive, dispatch = mine["arrive"]["seq"], mine["dispatch"]["seq"]
    ahead: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for row in rows[arrive + 1 : dispatch]:
        if row["kind"] == "dispatch":
            ahead[row["user"]][0] += 1
            ahead[row["user"]][1] += row["cost"]
    return {
        "user": mine["arrive"]["user"],
        "arrived": mine["arrive"]["t"],
        "dispatched": mine["dispatch"]["t"],
        "completed": mine["complete"]["t"],
        "waited": mine["dispatch"]["t"] - mine["arrive"]["t"],
        "position": sum(1 for row in rows[: dispatch + 1] if row["kind"] == "dispatch"),
        "ahead": {user: (count, cost) for user, (count, cost) in ahead.items()},
    }


@pytest.mark.parametrize(("scheduler", "request_id"), [("sfq", "r000500"), ("drr", "r000077"), ("sfq", "r000001")])
def test_explain_json_agrees_with_the_log(scheduler: str, request_id: str, tmp_path: Path, cli: CliRunner) -> None:
    log = tmp_path / "log.parquet"
    assert invoke(cli, "simulate", str(HEAVY), "-s", scheduler, "-o", str(log))[0] == 0
    expected = from_the_log(log, request_id)
    for source in (HEAVY, log):  # the trace replayed, and the saved log: the same answer
        got = explained(cli, str(source), request_id, "-s", scheduler)
        assert got["request_id"] == request_id and got["scheduler"] == scheduler and got["slots"] == 4
        for key in ("user", "arrived", "dispatched", "completed", "waited", "position"):
            assert got[key] == expected[key], key
        assert {a["user"]: (a["requests"], a["cost"]) for a in got["ahead"]} == expected["ahead"]
        assert got["user"] in {c["user"] for c in got["candidates"]} and got["reason"] and got["narration"]
        assert set(got["candidates"][0]) == {"user", "value", "queued", "weight", "head_request", "head_cost"}


def test_compare_tells_when_and_as_which_dispatch_the_other_scheduler_sent_it(tmp_path: Path, cli: CliRunner) -> None:
    log = tmp_path / "drr.parquet"
    assert invoke(cli, "simulate", str(HEAVY), "-s", "drr", "-o", str(log))[0] == 0
    expected = from_the_log(log, "r000500")
    got = explained(cli, str(HEAVY), "r000500", "--compare", "drr")
    assert got["compare"] == {"drr": {"run": "drr", **{k: expected[k] for k in ("dispatched", "position", "waited")}}}


def test_the_worked_example_for_people(cli: CliRunner) -> None:
    code, out, _ = invoke(cli, "explain", str(TRACES / "seed-example.parquet"), "r000005", "--compare", "drr")
    assert code == 0
    assert "r000005 of B under sfq, 1 slot" in out
    assert "dispatched  t 3, dispatch #2, cost 1" in out
    assert "why: smallest meter: B at 0, next A at 3" in out
    assert "Went ahead of it: 1 dispatch after it arrived, before its own" in out


def test_an_unknown_request_id_is_a_clear_error(cli: CliRunner) -> None:
    code, out, err = invoke(cli, "explain", str(TRACES / "seed-example.parquet"), "r999999")
    assert code == 2 and out == ""
    assert "no request 'r999999' in" in err and "such as r000001" in err


def test_compare_needs_a_trace_not_a_log(tmp_path: Path, cli: CliRunner) -> None:
    log = tmp_path / "log.parquet"
    assert invoke(cli, "simulate", str(TRACES / "seed-example.parquet"), "-o", str(log))[0] == 0
    code, _, err = invoke(cli, "explain", str(log), "r000005", "--compare", "drr")
    assert code == 2 and "is an event log" in err
    code, _, err = invoke(cli, "explain", str(TRACES / "seed-example.parquet"), "r000005", "--compare", "wfq")
    assert code == 2 and "unknown scheduler(s) wfq" in err


def test_explain_and_the_log_carry_the_cached_prompt_tokens(tmp_path: Path, cli: CliRunner) -> None:
    """Engines that model their prefix caches (a trace with blocks, semantics §14): the start row's
    cached_tokens, explain from the log and explain of the replayed trace all say the same."""
    trace, log = TRACES / "multi-turn.parquet", tmp_path / "log.parquet"
    assert invoke(cli, "simulate", str(trace), "-o", str(log), "--engines", "2")[0] == 0
    starts = pl.read_parquet(log).filter(pl.col("kind") == "start")
    cached = dict(zip(starts["request_id"].to_list(), starts["cached_tokens"].to_list()))
    assert cached["r000001"] == 0 and max(cached.values()) > 512  # the system prompt, then whole conversations
    for request_id in ("r000001", "r000100", "r000400"):
        assert explained(cli, str(log), request_id)["cached_tokens"] == cached[request_id]
        assert explained(cli, str(trace), request_id, "--engines", "2")["cached_tokens"] == cached[request_id]
    assert f"cached      {cached['r000100']:,} prompt tokens" in invoke(cli, "explain", str(log), "r000100")[1]


def test_a_log_without_blocks_has_no_cached_tokens(tmp_path: Path, cli: CliRunner) -> None:
    log = tmp_path / "log.parquet"
    assert invoke(cli, "simulate", str(TRACES / "demo.parquet"), "-o", str(log), "--engines", "2")[0] == 0
    assert "cached_tokens" not in pl.read_parquet(log).columns
    assert "cached_tokens" not in explained(cli, str(log), "r000010")
