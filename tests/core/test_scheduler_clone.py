"""A scheduler's clone (the shadow's copies) is independent of it and goes on exactly as it would."""

from __future__ import annotations

import random
from collections.abc import Hashable

import pytest

from sfqtui.core.schedulers import SCHEDULERS, Scheduler, make_scheduler


def operations(seed: int, n: int = 400) -> list[tuple[str, int, str]]:
    """Arrivals of three users' requests, dispatches, completions and cancellations, in a
    random order (a dispatch with nothing queued, or a cancellation of a request already
    sent, is skipped when played)."""
    rng = random.Random(seed)
    ops: list[tuple[str, int, str]] = []
    arrived: list[tuple[int, str]] = []
    for _ in range(n):
        choice = rng.random()
        if choice < 0.4 or not arrived:
            arrived.append((len(arrived), rng.choice("abc")))
            ops.append(("arrive", *arrived[-1]))
        elif choice < 0.7:
            ops.append(("dispatch", -1, ""))
        elif choice < 0.8:
            ops.append(("cancel", *rng.choice(arrived[-6:])))
        else:
            ops.append(("complete", -1, ""))
    return ops


class Driver:
    """Plays operations on a scheduler; completions finish the oldest running request
    (charged 0 or 2), and a cancellation of a request no longer queued is skipped."""

    def __init__(self) -> None:
        self.running: list[tuple[int, Hashable]] = []
        self.gone: set[int] = set()  # sent or cancelled

    def copy(self) -> Driver:
        twin = Driver()
        twin.running, twin.gone = list(self.running), set(self.gone)
        return twin

    def play(self, sched: Scheduler, ops: list[tuple[str, int, str]]) -> list[object]:
        """What each operation returned."""
        seen: list[object] = []
        for kind, req, user in ops:
            if kind == "arrive":
                seen.append(sched.arrive(req, user))
            elif kind == "dispatch" and sched.backlogged:
                out = sched.dispatch(lambda r: 1.0 + r % 7)
                self.running.append((out[0], out[1]))
                self.gone.add(out[0])
                seen.append(out)
            elif kind == "cancel" and req not in self.gone:
                seen.append(sched.cancel(req, user))
                self.gone.add(req)
            elif kind == "complete" and self.running:
                done_req, done_user = self.running.pop(0)
                seen.append(sched.complete(done_req, done_user, 2.0 * (done_req % 2)))
            if sched.backlogged == 0:
                seen.append(sched.idle_reset())
        return seen


@pytest.mark.parametrize("name", SCHEDULERS)
@pytest.mark.parametrize("seed", range(5))
def test_a_clone_goes_on_as_the_original_and_apart_from_it(name: str, seed: int) -> None:
    ops = operations(seed)
    half = len(ops) // 2
    reference = Driver().play(make_scheduler(name, {"b": 2.0}, 3.0), ops)  # never cloned
    original, driver = make_scheduler(name, {"b": 2.0}, 3.0), Driver()
    before = driver.play(original, ops[:half])
    twin, twin_driver = original.clone(), driver.copy()
    assert before + twin_driver.play(twin, ops[half:]) == reference
    # The clone went first: had it shared anything with the original, the original would now differ.
    assert before + driver.play(original, ops[half:]) == reference


@pytest.mark.parametrize("name", SCHEDULERS)
def test_a_clone_completes_a_request_whose_user_has_nothing_queued(name: str) -> None:
    original = make_scheduler(name, {}, 3.0)
    original.arrive(0, "a")
    sent = original.dispatch(lambda r: 1.0)
    twin = original.clone()  # a's queue is empty: the copy leaves it out
    assert twin.complete(sent[0], "a", 1.0) == original.complete(sent[0], "a", 1.0)
    assert twin.queued("a") == original.queued("a") == 0


@pytest.mark.parametrize("name", SCHEDULERS)
def test_a_clone_dispatches_past_a_user_whose_last_request_was_cancelled(name: str) -> None:
    original = make_scheduler(name, {}, 3.0)
    original.arrive(0, "a")
    original.arrive(1, "b")
    original.cancel(0, "a")  # a's queue is empty: the copy leaves it out (VTC keeps a stale heap entry)
    twin = original.clone()
    assert twin.dispatch(lambda r: 1.0) == original.dispatch(lambda r: 1.0)
