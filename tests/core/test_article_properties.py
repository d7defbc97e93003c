"""The five properties of article §7.5, each on its `gen` scenario."""

from collections import Counter
from typing import Any

from sfqtui.core.analysis.audit import audit
from sfqtui.core.log.rows import LogRows
from sfqtui.scenarios import SCENARIOS, generate
from sfqtui.trace.load import normalise, to_core
from tests.helpers import replay


def scenario_log(name: str, scheduler: str = "sfq", **kwargs: Any) -> LogRows:
    trace = to_core(normalise(generate(name, seed=7, **kwargs)))
    return replay(trace, scheduler, slots=SCENARIOS[name].slots)


def backlogged_dispatch_counts(log: LogRows) -> list[Counter[str]]:
    """Cumulative dispatch counts at each dispatch made while every user was backlogged."""
    queued: Counter[str] = Counter()
    users = {u for u in log.user if u}
    counts: Counter[str] = Counter()
    snapshots = []
    for kind, user in zip(log.kind, log.user):
        if user is None:  # idle resets name nobody
            continue
        if kind == "arrive":
            queued[user] += 1
        elif kind == "dispatch":
            everyone = all(queued[u] > 0 for u in users)
            queued[user] -= 1
            counts[user] += 1
            if everyone:
                snapshots.append(counts.copy())
    return snapshots


def test_1_equal_costs_split_dispatches_within_one() -> None:
    snapshots = backlogged_dispatch_counts(scenario_log("equal"))
    assert len(snapshots) > 100
    for counts in snapshots:
        assert abs(counts["user-0"] - counts["user-1"]) <= 1


def test_2_ten_times_the_cost_gets_a_tenth_of_the_dispatches() -> None:
    log = scenario_log("heavy-vs-light")
    snapshots = backlogged_dispatch_counts(log)
    last = snapshots[-1]
    assert last["heavy"] > 20
    assert 9.0 <= last["light-0"] / last["heavy"] <= 11.0
    assert audit(log).ok


def test_3_a_returning_user_has_no_saved_up_priority() -> None:
    log = scenario_log("idle-return")
    returns = [k for k in range(len(log)) if log.user[k] == "returner" and log.kind[k] == "arrive"]
    second_burst = [k for k in returns if log.t[k] > log.t[returns[0]] + 1]
    k0 = second_burst[0]
    assert log.meter[k0] == log.v[k0], "the returner joins at v, not below it"
    # in the next 30 dispatches it gets about a third (3 backlogged users), not all of them
    following = [log.user[k] for k in range(k0, len(log)) if log.kind[k] == "dispatch"][:30]
    assert 8 <= following.count("returner") <= 11


def test_4_a_trickling_user_gets_no_more_than_a_backlogged_one() -> None:
    report = audit(scenario_log("trickle"))
    assert report.ok
    gap = report.worst_gap
    assert gap is not None and gap.gap <= 2 * report.c_max
    loophole = audit(scenario_log("trickle", "sfq-reset"))
    assert not loophole.ok
    assert any(v.rule == "§3.2/§3.3" for v in loophole.violations)


def test_5_after_global_idle_everyone_starts_from_the_same_v() -> None:
    log = scenario_log("global-idle")
    second = [k for k in range(len(log)) if log.kind[k] == "arrive" and log.t[k] >= 100.0]
    first_arrivals: dict[str | None, int] = {}
    for k in second:
        first_arrivals.setdefault(log.user[k], k)
    meters = {log.meter[k] for k in first_arrivals.values()}
    vs = {log.v[k] for k in first_arrivals.values()}
    assert len(first_arrivals) == 3
    assert meters == vs and len(meters) == 1
    # and that v is the heavy user's finish tag from the first burst
    resets = [log.v[k] for k in range(len(log)) if log.kind[k] == "idle_reset" and log.t[k] < 100.0]
    assert resets[-1] == meters.pop()
