"""A scheduler's clone (the shadow's copies) is independent of it and goes on exactly as it would."""

from __future__ import annotations

import random

import pytest

from sfqtui.core.schedulers import SCHEDULERS, Scheduler, make_scheduler


def operations(seed: int, n: int = 400) -> list[tuple[str, int, str]]:
    """Arrivals of three users' requests, dispatches while any wait, and completions, in a random order."""
    rng = random.Random(seed)
    ops, queued, running, req = [], 0, [], 0
    for _ in range(n):
        choice = rng.random()
        if choice < 0.45 or queued == 0 and not running:
            ops.append(("arrive", req, rng.choice("abc")))
            req, queued = req + 1, queued + 1
        elif choice < 0.8 and queued:
            ops.append(("dispatch", -1, ""))
            queued -= 1
            running.append(None)
        elif running:
            ops.append(("complete", -1, ""))
            running.pop()
    return ops


def play(sched: Scheduler, ops: list[tuple[str, int, str]], running: list[tuple[int, str]]) -> list[object]:
    """Apply the operations; completions finish the oldest running request. What each one returned."""
    seen: list[object] = []
    for kind, req, user in ops:
        if kind == "arrive":
            seen.append(sched.arrive(req, user))
        elif kind == "dispatch":
            sent = sched.dispatch(lambda r: 1.0 + r % 7)
            running.append((sent[0], sent[1]))
            seen.append(sent)
        else:
            done_req, done_user = running.pop(0)
            seen.append(sched.complete(done_req, done_user, 2.0))
        if sched.backlogged == 0:
            seen.append(sched.idle_reset())
    return seen


@pytest.mark.parametrize("name", SCHEDULERS)
@pytest.mark.parametrize("seed", range(5))
def test_a_clone_goes_on_as_the_original_and_apart_from_it(name: str, seed: int) -> None:
    ops = operations(seed)
    half = len(ops) // 2
    reference = play(make_scheduler(name, {"b": 2.0}, 3.0), ops, [])  # never cloned
    original = make_scheduler(name, {"b": 2.0}, 3.0)
    running: list[tuple[int, str]] = []
    before = play(original, ops[:half], running)
    twin, twin_running = original.clone(), list(running)
    assert before + play(twin, ops[half:], twin_running) == reference
    # The clone went first: had it shared anything with the original, the original would now differ.
    assert before + play(original, ops[half:], running) == reference


@pytest.mark.parametrize("name", SCHEDULERS)
def test_a_clone_completes_a_request_whose_user_has_nothing_queued(name: str) -> None:
    original = make_scheduler(name, {}, 3.0)
    original.arrive(0, "a")
    sent = original.dispatch(lambda r: 1.0)
    twin = original.clone()  # a's queue is empty: the copy leaves it out
    assert twin.complete(sent[0], "a", 1.0) == original.complete(sent[0], "a", 1.0)
    assert twin.queued("a") == original.queued("a") == 0
