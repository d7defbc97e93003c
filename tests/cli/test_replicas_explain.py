"""Run specs, and `explain` on a replicated run: the replica that held a request, its own
candidates, and who waiting on another replica had a smaller meter (semantics §11).

The trace is the replicas lesson's (premium weight 4, regular weight 1, equal costs 512,
all waiting at t = 0, 4 slots). Hash routing puts regular on replica 0 and premium on
replica 1, 2 slots each; at each timestamp replica 0 dispatches first. So at regular's
n-th dispatch (t = n // 2) its meter is 512 n, and premium, dispatched 2 t times at 128
each, stands at 256 t: under one SFQ premium would have gone first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.run_spec import RunSpec, parse_run_specs, split_run_specs
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.errors import InputError
from sfqtui.scenarios.lessons import LESSONS

HASHED = ["--slots", "4", "--replicas", "2", "--router", "hash"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "premium-regular.parquet"
    LESSONS["replicas"].write(path)
    return path


def explained(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["explain", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_run_specs_split_on_commas_keeping_settings_and_sync_delays() -> None:
    assert split_run_specs("drr, sfq@replicas=2,router=hash,share=sync:5,1,fifo,sfq@k=4") == [
        "drr", "sfq@replicas=2,router=hash,share=sync:5,1", "fifo", "sfq@k=4"]
    drr, sync, fifo, four = parse_run_specs("drr,sfq@replicas=2,router=hash,share=sync:5,1,fifo,sfq@k=4")
    assert drr == RunSpec("drr") and drr.plain and fifo == RunSpec("fifo")
    assert sync == RunSpec("sfq", 2, "hash", Share("sync", 5.0, 1.0)) and str(sync) == "sfq@replicas=2,router=hash,share=sync:5,1"
    assert four == RunSpec("sfq", replicas=4) and not four.plain
    # What a spec does not give is the compared run's.
    base = ReplayConfig("sfq", slots=8, replicas=ReplicaSettings(2, "random", Share("global"), seed=3))
    config = four.config(base)
    assert config.replicas == ReplicaSettings(4, "random", Share("global"), seed=3) and config.slots == 8
    assert RunSpec("drr").config(base).replicas == base.replicas


@pytest.mark.parametrize(("text", "says"), [
    ("sfqq,drr,wfq@replicas=2", r"unknown scheduler\(s\) sfqq, wfq; choose from sfq, "),
    ("sfq@", "nothing after @"),
    ("sfq@colour=red", "'colour=red' is not a setting"),
    ("sfq@replicas=two", "replicas takes a whole number"),
    ("sfq@router=nearest", "unknown router 'nearest'"),
    ("sfq@share=sync:0", "needs a period T > 0"),
    ("sfq@replicas=2,replicas=3", "replicas is given twice"),
    ("", "no run spec"),
])
def test_a_bad_run_spec_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        parse_run_specs(text)


def test_a_spec_that_does_not_fit_the_run_is_refused() -> None:
    with pytest.raises(InputError, match="run spec drr@replicas=2,share=sync:5: share sync exchanges meters"):
        RunSpec.parse("drr@replicas=2,share=sync:5").config(ReplayConfig("sfq", slots=4))
    with pytest.raises(InputError, match="fewer than --replicas 8"):
        RunSpec.parse("sfq@replicas=8").config(ReplayConfig("sfq", slots=4))


def test_explain_on_a_replicated_log_names_the_replica_and_who_elsewhere_was_below(trace: Path, tmp_path: Path) -> None:
    log = tmp_path / "split.parquet"
    result = CliRunner().invoke(cli, ["simulate", str(trace), "-o", str(log), *HASHED, "--share", "none"])
    assert result.exit_code == 0, result.output
    regular = explained(str(log), "r000421")  # regular's dispatch n = 20, at t = 10
    assert regular["replica"] == 0 and regular["replicas"]["count"] == 2 and regular["dispatched"] == 10
    assert [c["user"] for c in regular["candidates"]] == ["regular"]  # replica 0's own: premium waits elsewhere
    assert regular["ahead"] == [{"user": "regular", "requests": 20, "cost": 20 * 512}]  # only replica 0's dispatches
    across = regular["across_replicas"]
    assert across["replica"] == 0 and across["share"] == "none" and across["meter"] == 20 * 512
    assert across["elsewhere"] == [{"user": "premium", "replica": 1, "meter": 2560, "below": 10240 - 2560, "queued": 380}]
    assert regular["narration"].startswith("replica 0: regular is chosen: the only user waiting, S_regular = 10,240")
    premium = explained(str(log), "r000021")  # premium's dispatch n = 20, also at t = 10, after regular's two
    assert premium["replica"] == 1 and premium["across_replicas"]["meter"] == 2560
    assert premium["across_replicas"]["elsewhere"] == []  # regular's meter (11,264 by then) is higher
    text = CliRunner().invoke(cli, ["explain", str(log), "r000421"]).output
    assert "held on replica 0" in text and "Went ahead of it on replica 0: 20 dispatches" in text
    assert "premium on 1 (7,680 below)" in " ".join(text.split()) and "would have gone first" in " ".join(text.split())


def test_under_share_global_nobody_elsewhere_is_ever_below_the_pick(trace: Path) -> None:
    found = explained(str(trace), "r000421", *HASHED, "--share", "global")
    assert found["replica"] == 0 and found["across_replicas"]["share"] == "global"
    assert found["across_replicas"]["elsewhere"] == [] and "one SFQ over every replica" in found["across_replicas"]["summary"]
    assert {c["user"] for c in found["candidates"]} == {"premium", "regular"}  # one scheduler: everyone waiting anywhere
    assert sum(a["requests"] for a in found["ahead"]) == found["position"] - 1


def test_explain_compares_a_request_under_other_run_specs(trace: Path) -> None:
    found = explained(str(trace), "r000421", "--slots", "4", "--compare", "sfq@replicas=2,router=hash,share=none,drr")
    # One SFQ sends P R P P P P R ...: regular's n-th dispatch is the (5 n + 2)-th, 4 a second.
    assert (found["position"], found["dispatched"]) == (102, 25) and "replica" not in found
    split = found["compare"]["sfq@replicas=2,router=hash,share=none"]
    assert split == {"run": "sfq@replicas=2,router=hash,share=none", "dispatched": 10, "position": 41, "waited": 10, "replica": 0}
    assert set(found["compare"]) == {"sfq@replicas=2,router=hash,share=none", "drr"}
    refused = CliRunner().invoke(cli, ["explain", str(trace), "r000421", "--compare", "sfq@router=nearest"])
    assert refused.exit_code == 2 and "unknown router 'nearest'" in refused.output


def test_a_bare_scheduler_beside_a_replicated_run_is_replicated_too_and_named_so(trace: Path) -> None:
    found = explained(str(trace), "r000421", *HASHED, "--compare", "sfq,sfq@replicas=1")
    same, one = found["compare"]["sfq"], found["compare"]["sfq@replicas=1"]
    assert same["run"] == "sfq@replicas=2,router=hash,share=none" and same["position"] == found["position"]
    assert one["run"] == "sfq" and "replica" not in one
    text = CliRunner().invoke(cli, ["explain", str(trace), "r000421", *HASHED, "--compare", "sfq"])
    assert text.exit_code == 0 and text.output.count("sfq@replicas=2,router=hash,share=none") == 2


def test_runs_that_differ_only_by_their_seed_are_named_apart(trace: Path) -> None:
    found = explained(str(trace), "r000421", "--slots", "4", "--replicas", "2", "--router", "random", "--compare", "sfq@seed=1,sfq@seed=2")
    assert [c["run"] for c in found["compare"].values()] == ["sfq@replicas=2,router=random,share=none,seed=1",
                                                            "sfq@replicas=2,router=random,share=none,seed=2"]
