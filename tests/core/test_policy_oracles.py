"""The policies of semantics §15 against oracles written from their rules alone (docs/semantics.md §15).

Each oracle keeps the waiting requests in one plain list and picks the next by the rule as
written, with none of the schedulers' bookkeeping; both are driven through the same random
arrivals, dispatches and cancellations, with random priorities, flows, classes and deadlines.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import pytest

from sfqtui.core.schedulers import make_scheduler
from sfqtui.core.schedulers.base import Scheduler, User
from sfqtui.core.schedulers.dynamo import Dynamo
from sfqtui.core.schedulers.policy import Flow, PolicyOptions, RequestAttributes


@dataclass(frozen=True)
class Req:
    n: int
    user: str
    priority: int
    flow: str
    klass: str
    deadline: float
    tokens: int
    arrival: float


class Table(RequestAttributes):
    def __init__(self) -> None:
        self.rows: dict[int, Req] = {}

    def priority(self, req: int) -> int:
        return self.rows[req].priority

    def flow(self, req: int, user: User) -> Flow:
        return self.rows[req].flow

    def policy_class(self, req: int) -> str:
        return self.rows[req].klass

    def deadline(self, req: int) -> float:
        return self.rows[req].deadline

    def tokens(self, req: int) -> float | None:
        return float(self.rows[req].tokens)

    def arrival(self, req: int) -> float | None:
        return self.rows[req].arrival


def cost_of(req: int) -> float:
    return 1.0 + req % 5


@dataclass
class LlmDOracle:
    """Highest band; in it, the first flow after the one it served last (by flow id, wrapping); in
    the flow, the oldest (or the earliest deadline, then the oldest)."""

    edf: bool
    waiting: list[Req] = field(default_factory=list)
    last: dict[int, str] = field(default_factory=dict)

    def pick(self, _now: float) -> Req:
        band = max(r.priority for r in self.waiting)
        flows = sorted({r.flow for r in self.waiting if r.priority == band})
        later = [f for f in flows if band in self.last and f > self.last[band]]
        flow = later[0] if later else flows[0]
        self.last[band] = flow
        mine = [r for r in self.waiting if r.priority == band and r.flow == flow]
        return min(mine, key=lambda r: (r.deadline if self.edf else 0.0, r.n))


@dataclass
class LiteLLMOracle:
    """The lowest priority number, then the oldest."""

    waiting: list[Req] = field(default_factory=list)

    def pick(self, _now: float) -> Req:
        return min(self.waiting, key=lambda r: (r.priority, r.n))


@dataclass
class DynamoOracle:
    """The highest tier; the classes whose head (a class's highest tier, then its oldest) is in
    it compete by DRR: the class that kept credit
    goes on if its head fits; else a ring pass (class names in order) from the class after the
    last served, each visited class earning its quantum and sending if its head fits; else every
    candidate earns the fewest whole rounds that let some head fit, and the first such in ring
    order sends. Sending spends max(1, tokens); an emptied class drops its credit."""

    quanta: dict[str, float]
    waiting: list[Req] = field(default_factory=list)
    credit: dict[str, float] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    after: str | None = None
    carry: str | None = None

    def head(self, klass: str) -> Req | None:
        mine = [r for r in self.waiting if r.klass == klass]
        return min(mine, key=lambda r: (-r.priority, r.n)) if mine else None

    def pick(self, _now: float) -> Req:
        ring = sorted(self.seen)
        heads = {k: h for k in ring if (h := self.head(k)) is not None}
        top = max(h.priority for h in heads.values())
        cands = {k: h for k, h in heads.items() if h.priority == top}
        cost = {k: max(1.0, h.tokens) for k, h in cands.items()}
        for k in ring:
            self.credit.setdefault(k, 0.0)
        carry, self.carry = self.carry, None
        if carry in cands and cost[carry] <= self.credit[carry]:
            return self.send(carry, cands, cost)
        start = 0 if self.after is None else len([k for k in ring if k <= self.after])
        order = ring[start:] + ring[:start]
        for k in order:
            if k in cands:
                if cost[k] <= self.credit[k]:
                    return self.send(k, cands, cost)
                self.credit[k] += self.quanta.get(k, 1.0)
                if cost[k] <= self.credit[k]:
                    return self.send(k, cands, cost)
        rounds = 1
        while not any(self.credit[k] + rounds * self.quanta.get(k, 1.0) >= cost[k] for k in cands):
            rounds += 1
        for k in cands:
            self.credit[k] += rounds * self.quanta.get(k, 1.0)
        return self.send(next(k for k in order if k in cands and self.credit[k] >= cost[k]), cands, cost)

    def send(self, k: str, cands: dict[str, Req], cost: dict[str, float]) -> Req:
        self.credit[k] -= cost[k]
        self.after = k
        if not any(r.klass == k and r is not cands[k] for r in self.waiting):
            self.credit[k] = 0.0
        elif self.credit[k] > 0:
            self.carry = k
        return cands[k]

    def cancelled(self, r: Req) -> None:
        if not any(o.klass == r.klass for o in self.waiting):
            self.credit[r.klass] = 0.0


@dataclass
class LASOracle:
    """The waiting user with the least sum of cost * 2^-(age / h) over its past dispatches, ties by id; its oldest request."""

    half_life: float
    waiting: list[Req] = field(default_factory=list)
    served: list[tuple[float, str, float]] = field(default_factory=list)

    def attained(self, user: str, now: float) -> float:
        return sum(c * 2 ** (-(now - t) / self.half_life) for t, u, c in self.served if u == user)

    def pick(self, now: float) -> Req:
        user = min({r.user for r in self.waiting}, key=lambda u: (self.attained(u, now), u))
        req = min((r for r in self.waiting if r.user == user), key=lambda r: r.n)
        self.served.append((now, user, cost_of(req.n)))
        return req


def play(sched: Scheduler, oracle: LlmDOracle | LiteLLMOracle | DynamoOracle | LASOracle, table: Table, seed: int, n: int = 300) -> int:
    """Random arrivals, dispatches and cancellations on both; returns the dispatches compared."""
    rng = random.Random(seed)
    now, compared, made = 0.0, 0, 0
    for _ in range(n):
        now += rng.choice([0.0, 0.5, 3.0, 40.0])
        choice = rng.random()
        if choice < 0.5 or not oracle.waiting:
            r = Req(made, rng.choice("abcd"), rng.choice([0, 0, 1, 5]), rng.choice(["f1", "f2", "f3"]), rng.choice(["gold", "free"]),
                    now + rng.choice([math.inf, 1.0, 5.0, 20.0]), rng.choice([0, 3, 50, 400]), now)
            made += 1
            table.rows[r.n] = r
            if isinstance(oracle, DynamoOracle):
                oracle.seen.add(r.klass)
            oracle.waiting.append(r)
            sched.arrive(r.n, r.user)
        elif choice < 0.9:
            sched.now = now
            want = oracle.pick(now)
            oracle.waiting.remove(want)
            got = sched.dispatch(cost_of)
            assert (got[0], got[1]) == (want.n, want.user), f"dispatch {compared}: the scheduler sent {got[:2]}, the rules say {want.n}"
            compared += 1
        else:
            gone = rng.choice(oracle.waiting)
            oracle.waiting.remove(gone)
            if isinstance(oracle, DynamoOracle):
                oracle.cancelled(gone)
            sched.cancel(gone.n, gone.user)
        assert sched.backlogged == len({r.user for r in oracle.waiting})
    return compared


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("edf", [False, True])
def test_llm_d_follows_its_rules(seed: int, edf: bool) -> None:
    table = Table()
    sched = make_scheduler("llm-d", attributes=table, options=PolicyOptions(ordering="edf" if edf else "fcfs"))
    assert play(sched, LlmDOracle(edf), table, seed) > 50


@pytest.mark.parametrize("seed", range(8))
def test_litellm_follows_its_rules(seed: int) -> None:
    table = Table()
    assert play(make_scheduler("litellm", attributes=table), LiteLLMOracle(), table, seed) > 50


@pytest.mark.parametrize("seed", range(8))
def test_dynamo_follows_its_rules(seed: int) -> None:
    table = Table()
    options = PolicyOptions(class_weights=(("gold", 3.0),), class_quantum=64.0)
    sched = make_scheduler("dynamo", attributes=table, options=options)
    assert play(sched, DynamoOracle({"gold": 192.0, "free": 64.0}), table, seed) > 50


@pytest.mark.parametrize("seed", range(8))
def test_las_follows_its_rules(seed: int) -> None:
    table = Table()
    sched = make_scheduler("las", attributes=table, options=PolicyOptions(half_life_s=10.0))
    assert play(sched, LASOracle(10.0), table, seed) > 50


def test_las_forgets_over_half_lives_without_overflow() -> None:
    # Hours of half-lives of 1 s: the scale is rebased instead of overflowing, and the order still follows attained service.
    table = Table()
    sched = make_scheduler("las", attributes=table, options=PolicyOptions(half_life_s=1.0))
    oracle = LASOracle(1.0)
    for n, (t, user) in enumerate([(0.0, "a"), (0.0, "b"), (5_000.0, "a"), (5_000.0, "b"), (9_000.0, "b"), (9_000.0, "a")]):
        table.rows[n] = Req(n, user, 0, user, "x", math.inf, 1, t)
        sched.arrive(n, user)
        oracle.waiting.append(table.rows[n])
        if n % 2:
            for _ in range(2):
                sched.now = t
                want = oracle.pick(t)
                oracle.waiting.remove(want)
                assert sched.dispatch(cost_of)[0] == want.n
    assert math.isfinite(sched.reading("a")[1])  # type: ignore[arg-type]  # las always reads a meter


@pytest.mark.parametrize("seed", range(4))
def test_a_dynamo_class_keeps_less_than_its_quantum(seed: int) -> None:
    # After every dispatch each class's deficit is in [0, its quantum + the largest cost): DRR's bound, fast-forward
    # included (a candidate that earned the rounds but came later in the ring keeps them for its head).
    rng = random.Random(seed)
    table = Table()
    sched = make_scheduler("dynamo", attributes=table, options=PolicyOptions(class_weights=(("gold", 3.0),), class_quantum=64.0))
    assert isinstance(sched, Dynamo)
    for n in range(400):
        table.rows[n] = Req(n, rng.choice("ab"), rng.choice([0, 1]), "f", rng.choice(["gold", "free"]), math.inf,
                            rng.choice([0, 10, 100, 1_000]), 0.0)
        sched.arrive(n, table.rows[n].user)
        if n % 3 == 0:
            _, _, _, _, _, _, credit = sched.dispatch(cost_of)
            assert credit is not None and credit >= 1
            assert all(0 <= sched.deficit(k) < sched.class_quantum(k) + 1_000 for k in ("gold", "free"))
