"""The proxy's fairness gauge (sfqtui_jain_index): each user judged on the dispatches at which it waited."""

from __future__ import annotations

from typing import Any

from sfqtui.core.pricing.estimator import CostEstimator, EstimatorParams
from sfqtui.proxy.dispatcher import Dispatcher, Stage, Ticket
from sfqtui.proxy.fairness_window import FairnessWindow


def dispatch(user: str, cost: float = 1.0, weight: float = 1.0) -> Any:  # the fields FairnessWindow reads
    return {"kind": "dispatch", "user": user, "cost": cost, "weight": weight}


def arrive(user: str, weight: float = 1.0) -> Any:
    return {"kind": "arrive", "user": user, "weight": weight}


def cancel(user: str) -> Any:
    return {"kind": "cancel", "user": user}


def jain_of(values: list[float]) -> float:
    return sum(values) ** 2 / (len(values) * sum(x * x for x in values))


def watched_dispatcher(fairness: FairnessWindow, slots: int, weights: dict[str, float] | None = None) -> tuple[Dispatcher, list[Any]]:
    """A real dispatcher whose events feed ``fairness``; the list collects its dispatches."""
    dispatched: list[Any] = []

    def sink(event: Any, _ticket: Any) -> None:
        fairness.see(event)
        if event["kind"] == "dispatch":
            dispatched.append(event)

    return Dispatcher(slots, weights or {}, CostEstimator(EstimatorParams()), sinks=(sink,)), dispatched


def finish_oldest(dispatcher: Dispatcher, tickets: list[Ticket]) -> Ticket:
    done = next(t for t in tickets if t.stage is Stage.RUNNING)
    tickets.remove(done)
    dispatcher.finish(done, 50)
    return done


async def test_a_user_that_asks_for_less_does_not_lower_the_index() -> None:
    fairness = FairnessWindow(size=200)
    dispatcher, dispatched = watched_dispatcher(fairness, 2, {"alice": 2.0})
    tickets = [dispatcher.arrive(user, 100, 50, None) for user in ("alice", "bob") for _ in range(40)]
    for n in range(300):
        if n % 25 == 0:
            tickets.append(dispatcher.arrive("carol", 10, 5, None))  # asks for little, in small requests
        done = finish_oldest(dispatcher, tickets)
        if done.user != "carol":
            tickets.append(dispatcher.arrive(done.user, 100, 50, None))  # alice and bob always have more waiting
    assert fairness.waited() == ["alice", "bob", "carol"]  # carol waited too, for a dispatch at a time
    jain = fairness.jain()
    assert jain is not None and jain > 0.99, jain
    by_user: dict[str, float] = {}
    for event in dispatched[-200:]:
        by_user[event["user"]] = by_user.get(event["user"], 0.0) + event["cost"] / event["weight"]
    assert jain_of(list(by_user.values())) < 0.8  # what the index would say over the cost per weight alone


async def test_users_that_start_on_free_slots_and_pause_are_counted_from_the_first_dispatches() -> None:
    fairness = FairnessWindow()
    dispatcher, _ = watched_dispatcher(fairness, 2)
    tickets = [dispatcher.arrive(user, 100, 50, None) for user in ("alice", "bob") for _ in range(6)]  # alice's first two go straight to the slots
    finish_oldest(dispatcher, tickets)
    assert fairness.waited() == ["alice", "bob"]
    while tickets:
        finish_oldest(dispatcher, tickets)
    jain = fairness.jain()
    assert jain is not None and jain > 0.95, jain
    for _ in range(3):  # alice pauses, bob goes on alone, then both are back
        tickets.append(dispatcher.arrive("bob", 100, 50, None))
        finish_oldest(dispatcher, tickets)
    tickets += [dispatcher.arrive(user, 100, 50, None) for _ in range(4) for user in ("alice", "bob")]
    while tickets:
        finish_oldest(dispatcher, tickets)
    assert fairness.waited() == ["alice", "bob"]
    jain = fairness.jain()
    assert jain is not None and jain > 0.95, jain


def test_the_index_drops_when_waiting_users_get_less_than_their_share() -> None:
    fairness = FairnessWindow(size=100)
    for user in ("alice", "bob", "carol"):
        for _ in range(200):
            fairness.see(arrive(user))
    for n in range(120):
        fairness.see(dispatch("alice" if n % 4 else "bob"))  # alice three times bob's share, carol starved
    assert fairness.waited() == ["alice", "bob", "carol"]
    jain = fairness.jain()
    # each was owed a third of every dispatch: alice got more (1 at most), bob 25 of 33.3, carol nothing
    assert jain is not None and abs(jain - jain_of([1.0, 0.75, 0.0])) < 1e-9, jain
    for _ in range(120):
        fairness.see(dispatch("carol"))
    assert fairness.jain() == 1.0 / 3  # only carol served in the window: the others still wait


def test_weights_set_the_share() -> None:
    fairness = FairnessWindow(size=90)
    for _ in range(200):
        fairness.see(arrive("alice", 2.0))
        fairness.see(arrive("bob"))
    for n in range(90):
        fairness.see(dispatch("bob" if n % 3 == 0 else "alice", weight=2.0 if n % 3 else 1.0))
    assert fairness.jain() == 1.0  # alice, of weight 2, got two thirds
    for n in range(90):
        fairness.see(dispatch("bob" if n % 2 == 0 else "alice", weight=2.0 if n % 2 else 1.0))
    jain = fairness.jain()  # now alice gets half: 22.5 per weight of the 30 she is owed
    assert jain is not None and abs(jain - jain_of([0.75, 1.0])) < 1e-9, jain


def test_a_user_idle_during_the_window_is_left_out_and_the_index_is_absent_before_a_dispatch() -> None:
    fairness = FairnessWindow(size=5)
    assert fairness.jain() is None
    fairness.see(arrive("alice"))
    assert fairness.jain() is None
    fairness.see(dispatch("alice"))
    assert fairness.waited() == ["alice"] and fairness.jain() == 1.0  # waited at its only dispatch
    for _ in range(5):
        fairness.see(arrive("bob"))
        fairness.see(dispatch("bob"))
    fairness.see(arrive("alice"))  # idle through bob's dispatches
    assert fairness.waited() == ["bob"]
    fairness.see(cancel("alice"))  # cancelled before any dispatch: it waited at none
    fairness.see(dispatch("bob"))
    assert fairness.waited() == ["bob"]
