"""The article's §2.7 table, the first acceptance test of semantics §3."""

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.scenarios import generate
from sfqtui.trace.load import normalise, to_core
from tests.helpers import dispatches, replay, trace_of


def test_seed_example_order_and_v() -> None:
    trace = to_core(normalise(generate("seed-example")))
    log = replay(trace, "sfq", slots=1)
    first8 = dispatches(log)[:8]
    assert [u for u, *_ in first8] == list("ABBBABBB")
    assert [v for _, _, v, _ in first8] == [0, 0, 1, 2, 3, 3, 4, 5]
    # the meters of the table after each charge: S_A, S_B columns
    assert [m for *_, m in first8] == [3, 1, 2, 3, 6, 4, 5, 6]


def test_ties_go_to_the_smaller_user_id_by_code_point() -> None:
    trace = trace_of([("b", 0, 1), ("B", 0, 1), ("a", 0, 1)])
    assert [u for u, *_ in dispatches(replay(trace))] == ["B", "a", "b"]


def test_weighted_charge_is_cost_over_weight() -> None:
    trace = trace_of([("x", 0, 4), ("x", 0, 4), ("y", 0, 4)], weights={"x": 2.0})
    got = dispatches(replay(trace))
    assert got[0] == ("x", 4.0, 0.0, 2.0)


def test_idle_reset_moves_v_to_the_largest_meter() -> None:
    trace = trace_of([("a", 0, 5), ("b", 10, 1)])
    log = replay(trace)
    resets = [log.v[k] for k in range(len(log)) if log.kind[k] == "idle_reset"]
    assert resets == [5.0, 6.0]
    joins = [log.meter[k] for k in range(len(log)) if log.kind[k] == "arrive" and log.user[k] == "b"]
    assert joins == [5.0]


def test_replay_is_pure_function_of_inputs() -> None:
    trace = to_core(normalise(generate("demo", seed=3)))
    a = Replay(trace, ReplayConfig("sfq", 4)).run_all()
    b = Replay(trace, ReplayConfig("sfq", 4)).run_all()
    assert (a.t, a.kind, a.req, a.cost, a.v, a.meter) == (b.t, b.kind, b.req, b.cost, b.v, b.meter)


def test_same_time_completions_apply_before_arrivals() -> None:
    # a's first request completes at t=1 exactly when b arrives; the completion row comes first
    trace = trace_of([("a", 0, 1), ("b", 1, 1)], service=[1.0, 1.0])
    log = replay(trace)
    at_one = [log.kind[k] for k in range(len(log)) if log.t[k] == 1.0]
    assert at_one == ["complete", "arrive", "dispatch", "idle_reset"]
