"""Hypothesis properties over random traces, weights and slot counts."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfqtui.core.analysis.audit import audit
from sfqtui.core.analysis.gaps import max_gain
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from tests.helpers import replay, trace_of

USERS = ["a", "b", "c", "d"]


@st.composite
def traces(draw: st.DrawFn, integer_costs: bool = False, weighted: bool = True) -> Trace:
    n = draw(st.integers(1, 60))
    users = draw(st.lists(st.sampled_from(USERS), min_size=n, max_size=n))
    arrivals = sorted(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))
    if integer_costs:
        costs = draw(st.lists(st.integers(1, 50).map(float), min_size=n, max_size=n))
    else:
        costs = draw(st.lists(st.floats(0.01, 100.0, allow_nan=False), min_size=n, max_size=n))
    services = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.5]), min_size=n, max_size=n))
    weights = {}
    if weighted:
        weights = draw(st.dictionaries(st.sampled_from(USERS), st.sampled_from([0.5, 1.0, 2.0, 4.0]), max_size=4))
    return trace_of([(u, a / 2, c) for u, a, c in zip(users, arrivals, costs)], service=services, weights=weights)


slots = st.integers(1, 4)


@settings(max_examples=150, deadline=None)
@given(traces(), slots)
def test_sfq_logs_pass_every_check(trace: Trace, n: int) -> None:
    """The band invariant (§3.1) and the 2 c_max bound (§3.2/§3.3) on random traces."""
    report = audit(replay(trace, "sfq", n))
    assert report.ok, report.violations


@settings(max_examples=60, deadline=None)
@given(traces(), slots, st.sampled_from(["sfq", "sfq-reset", "drr", "fifo", "rr"]))
def test_same_input_same_log(trace: Trace, n: int, scheduler: str) -> None:
    a, b = replay(trace, scheduler, n), replay(trace, scheduler, n)
    assert a == b


@settings(max_examples=100, deadline=None)
@given(traces(integer_costs=True), slots, st.integers(1, 5))
def test_renormalisation_changes_nothing(trace: Trace, n: int, every: int) -> None:
    """With exactly representable charges the renormalised log is identical, numbers included."""
    assert replay(trace, "sfq", n) == replay(trace, "sfq", n, renormalise_every=every)


def test_renormalisation_is_refused_where_it_could_change_a_decision() -> None:
    """Costs 1 and 0.01: the plain sums tie exactly where the shifted sums do not (found by hypothesis)."""
    costs = [1.0, 0.01, 1.0, 1.0, 1.0, 1.0, 0.01, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    trace = trace_of([("a" if k < 13 else "b", 0.0, c) for k, c in enumerate(costs)], service=0.5)
    with pytest.raises(ValueError, match="could change a decision"):
        Replay(trace, ReplayConfig("sfq", 1, renormalise_every=1))
    weighted = trace_of([("a", 0.0, 1.0), ("b", 0.0, 1.0)], weights={"a": 3.0})
    with pytest.raises(ValueError, match="could change a decision"):
        Replay(weighted, ReplayConfig("sfq", 1, renormalise_every=1))


def trickle_trace(count: int, cost: float) -> Trace:
    """'t' sends one request every 2 s; 'a' and 'b' are backlogged from t=0 (unit service, one slot)."""
    rows = [("a", 0.0, 10.0)] * 200 + [("b", 0.0, 10.0)] * 200
    rows += [("t", 0.5 + 2.0 * k, cost) for k in range(count)]
    return trace_of(rows, service=1.0)


def trickle_gain(trace: Trace, scheduler: str) -> tuple[float, float]:
    """Largest W_t - W_a while 'a' stays backlogged, and c_max."""
    run = Replay(trace, ReplayConfig(scheduler, 1))
    log = run.run_all()
    history: dict[str, tuple[list[int], list[float]]] = {}
    last_a = 0
    for k, (kind, req, cost) in enumerate(zip(log.kind, log.req, log.cost)):
        if kind == 1:
            user = trace.user_name(req)
            seqs, totals = history.setdefault(user, ([], []))
            seqs.append(k)
            assert cost is not None  # a dispatch row has its cost
            totals.append((totals[-1] if totals else 0.0) + cost)
            if user == "a":
                last_a = k
    gain = max_gain("t", "a", 0, last_a - 1, history)
    return (gain[0] if gain else 0.0), max(trace.cost)  # type: ignore[arg-type]  # the strategy gives every trace a cost column


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 60), st.sampled_from([10.0, 25.0, 40.0, 80.0]))
def test_a_trickling_user_gains_at_most_two_c_max(count: int, cost: float) -> None:
    gain, c_max = trickle_gain(trickle_trace(count, cost), "sfq")
    assert gain <= 2 * c_max


def test_sfq_reset_lets_the_trickler_break_the_bound() -> None:
    gain, c_max = trickle_gain(trickle_trace(60, 40.0), "sfq-reset")
    assert gain > 2 * c_max


@settings(max_examples=100, deadline=None)
@given(traces(), slots, st.sampled_from([None, 5.0, 50.0, 200.0]))
def test_drr_never_sends_more_than_its_deficit(trace: Trace, n: int, quantum: float | None) -> None:
    run = Replay(trace, ReplayConfig("drr", n, quantum=quantum))
    log = run.run_all()
    costs = [c for k, c in zip(log.kind, log.cost) if k == 1]
    credits = [c for k, c in zip(log.kind, log.credit) if k == 1]
    assert len(credits) == len(costs) and None not in credits
    assert all(c is not None and credit is not None and c <= credit for c, credit in zip(costs, credits))
    assert all(d is None or d >= 0 for d in log.deficit)


def test_float_rounding_of_cumulative_charges_is_not_a_violation() -> None:
    """Found by hypothesis: with costs 0.01 the float sums make W_a - W_b 0.020000000000000004
    against 2 c_max = 0.02; the bound check allows for the rounding of the sums."""
    trace = trace_of([("b", 0.0, 0.01)] * 6 + [("a", 0.5, 0.01)] * 4, service=1.0)
    report = audit(replay(trace, "sfq", 1))
    assert report.ok, report.violations
    assert report.worst_gap is not None and report.worst_gap.gap > 2 * report.c_max  # in floats, just over
