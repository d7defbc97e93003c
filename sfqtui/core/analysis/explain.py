"""Why a request was dispatched when it was, from the log and the rebuilt state.

For DRR the log's deficits are not enough: a visit that ends without sending writes no
row, so a user's logged deficit misses the quanta such visits gave it. Given a shadow of
the scheduler (sfqtui.core.log.shadow), a DRR dispatch is told from the scheduler's own
state: each waiting user's deficit before the dispatch, in visiting order, and for the
winner the deficit before its visit, the quantum the visit added, the credit the request
was sent against, its charge and what is left.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

from sfqtui.core.events import DISPATCH
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.log.shadow import Shadow
from sfqtui.core.log.table import EventTable, number
from sfqtui.core.log.timeline import State, Timeline
from sfqtui.core.numbers import amount
from sfqtui.core.schedulers import DRR


@dataclass(frozen=True)
class Candidate:
    user: str
    value: float | None  # the scheduler's own number: meter, counter or deficit
    queued: int
    weight: float
    head_request: str | None
    head_cost: float | None  # the cost it was charged when dispatched (None: not yet in the log)


@dataclass(frozen=True)
class DrrVisit:
    """The winner's deficit through a DRR dispatch (semantics §4): ``before`` the visit that
    sent the request (what earlier visits left; a visit going on gets no new quantum),
    the ``quantum`` this dispatch's visits added (``visits`` of them), the ``credit`` the
    request was sent against, its ``charge``, and the deficit ``after``: credit - charge,
    or 0 when the user's queue emptied and it left the active list. ``ended``: the visits
    of this dispatch that ended first, their head not fitting: (user, head cost, deficit)."""

    before: float
    quantum: float
    visits: int
    credit: float
    charge: float
    after: float
    emptied: bool
    ended: tuple[tuple[str, float, float], ...] = ()


@dataclass(frozen=True)
class DispatchExplanation:
    k: int
    scheduler: str
    user: str
    request: str | None
    cost: float
    v: float | None
    value_after: float | None
    c_max: float
    candidates: tuple[Candidate, ...]
    reason: str
    visit: DrrVisit | None = None  # DRR, when a shadow of the scheduler was at hand
    replica: int | None = None  # the replica that held the request, in a log of replicas

    @property
    def band_position(self) -> float | None:
        """Where the winner's meter now sits in [v, v + c_max], from 0 to 1."""
        if self.v is None or self.value_after is None or not self.c_max:
            return None
        return (self.value_after - self.v) / self.c_max


@dataclass(frozen=True)
class Ahead:
    user: str
    count: int
    cost: float
    first_meter: float | None
    last_meter: float | None


@dataclass(frozen=True)
class WaitExplanation:
    request: str
    user: str
    arrived_t: float
    dispatched_t: float | None
    wait: float | None
    ahead: tuple[Ahead, ...]
    ahead_total: int
    replica: int | None = None  # the replica that held it, in a log of replicas (its dispatches alone went ahead when split)


def explain_dispatch(table: EventTable, timeline: Timeline, k: int, after: State | None = None,
                     shadow: Shadow | None = None, replicas: ReplicaStates | None = None) -> DispatchExplanation | None:
    """The candidates just before dispatch k and why the winner won (``after``: the state at
    k, if at hand; ``shadow``: the scheduler re-driven from the log, which tells a DRR visit;
    it may raise ShadowMismatch). In a log of replicas each with its own scheduler
    (``replicas`` split), the candidates are those of the replica that held the request,
    with its meters."""
    if k < 0 or k >= len(table) or table.kind[k] != DISPATCH:
        return None
    held = table.replica_of(k) if replicas is not None and replicas.split else None
    if replicas is not None and held is not None:
        before = replicas.state_at(held, k - 1)
    else:
        before = timeline.state_at(k - 1)
    after = after if after is not None and after.k == k else timeline.state_at(k)
    winner = table.user[k]
    candidates = []
    for u in before.backlogged():
        head = table.next_dispatch(k - 1, u) if held is None else _next_dispatch_on(table, k - 1, u, held)
        candidates.append(
            Candidate(
                user=table.users[u],
                value=number(before.value[u]),
                queued=before.queued[u],
                weight=table.weight(u),
                head_request=table.request_id(head) if head is not None else None,
                head_cost=table.cost_at(head) if head is not None else None,
            )
        )
    candidates.sort(key=lambda c: (c.value if c.value is not None else 0.0, c.user))
    name = table.users[winner]
    cost = table.cost_at(k)
    value_after = number(table.value[k])
    traits = table.traits
    ranked = [(c.user, c.value) for c in candidates]
    reason = traits.reason(name, ranked, cost, value_after) if traits is not None else f"{table.scheduler} picked {name}"
    visit = None
    if shadow is not None and held is None and isinstance(shadow.at(k - 1), DRR):  # a shadow follows one scheduler
        candidates, visit = _drr_dispatch(table, k, shadow, candidates, after.queued[winner] == 0)
        reason = _drr_reason(name, visit)
    return DispatchExplanation(
        k=k,
        scheduler=table.scheduler,
        replica=table.replica_of(k),
        user=name,
        request=table.request_id(k),
        cost=cost,
        v=number(table.v[k]),
        value_after=value_after,
        c_max=after.c_max,
        candidates=tuple(candidates),
        reason=reason,
        visit=visit,
    )


def _drr_dispatch(table: EventTable, k: int, shadow: Shadow, candidates: list[Candidate],
                  emptied: bool) -> tuple[list[Candidate], DrrVisit]:
    """The candidates with the deficits DRR held before dispatch k, in visiting order, and the
    winner's visit."""
    sched = shadow.at(k - 1)
    assert isinstance(sched, DRR)
    order = {user: i for i, user in enumerate(sched.active_list())}
    deficits = {c.user: sched.reading(c.user)[2] for c in candidates}
    resumed = sched.visiting
    name = table.users[table.user[k]]
    before = deficits.get(name) or 0.0
    looks = shadow.looks(k)  # moves the shadow: read the state before first
    visits = sum(1 for i, look in enumerate(looks) if look.user == name and (i > 0 or look.user != resumed))
    credit = looks[-1].credit if looks and looks[-1].credit is not None else before
    charge = table.cost_at(k)
    ordered = sorted((Candidate(c.user, deficits[c.user], c.queued, c.weight, c.head_request, c.head_cost) for c in candidates),
                     key=lambda c: order.get(c.user, len(order)))
    ended = tuple((look.user, look.cost, look.credit or 0.0) for look in looks[:-1])
    return ordered, DrrVisit(before, credit - before, visits, credit, charge, 0.0 if emptied else credit - charge, emptied, ended)


def _drr_reason(user: str, visit: DrrVisit) -> str:
    if not visit.visits:
        return f"DRR visit: {user}'s visit goes on: its head request ({amount(visit.charge)}) fits the deficit left, {amount(visit.credit)}"
    gets = "a quantum" if visit.visits == 1 else f"{visit.visits} quanta"
    return (f"DRR visit: {user} gets {gets}: its head request ({amount(visit.charge)}) fits its deficit "
            f"{amount(visit.before)} + {amount(visit.quantum)} = {amount(visit.credit)}")


def _next_dispatch_on(table: EventTable, k: int, user: int, replica: int) -> int | None:
    """User ``user``'s first dispatch after event k on ``replica``."""
    mine = table.user_dispatches[user]
    for n in range(bisect_right(mine, k), len(mine)):
        if table.replica[mine[n]] == replica:
            return mine[n]
    return None


def explain_wait(table: EventTable, request: int, split: bool = False) -> WaitExplanation | None:
    """When the request (by code) arrived, how long it waited, and whose requests went
    ahead meanwhile: the dispatches after its arrival and before its own (semantics §10).
    ``split``: a log of replicas each with its own scheduler and slots, where only the
    dispatches of the request's own replica went ahead of it."""
    if not 0 <= request < len(table.arrive_at):
        return None
    life = table.life_of(request)
    arrived = life.get("arrive")
    if arrived is None:
        return None
    dispatched = life.get("dispatch")
    end = dispatched if dispatched is not None else len(table)
    counts: Counter[int] = Counter()
    costs: dict[int, float] = {}
    first: dict[int, float | None] = {}
    last: dict[int, float | None] = {}
    dispatches = table.dispatches
    n = table.dispatch_number(arrived)
    held = table.replica_of(arrived) if split else None
    for k in table.dispatches_between(arrived, end):
        while dispatches[n] != k:
            n += 1
        if held is not None and table.replica[k] != held:
            continue
        u = table.user[k]
        counts[u] += 1
        costs[u] = costs.get(u, 0.0) + table.cost[n]
        first.setdefault(u, number(table.v[k]))
        last[u] = number(table.v[k])
    ahead = tuple(
        Ahead(table.users[u], c, costs[u], first[u], last[u]) for u, c in counts.most_common()
    )
    assert table.names is not None
    return WaitExplanation(
        request=table.names[request],
        user=table.users[table.user[arrived]],
        arrived_t=table.t[arrived],
        dispatched_t=table.t[dispatched] if dispatched is not None else None,
        wait=(table.t[dispatched] - table.t[arrived]) if dispatched is not None else None,
        ahead=ahead,
        ahead_total=sum(counts.values()),
        replica=table.replica_of(arrived),
    )
