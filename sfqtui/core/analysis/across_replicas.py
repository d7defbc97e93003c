"""Who would have gone first under one SFQ: at a dispatch of a replicated log, the users
waiting on the other replicas with smaller meters (semantics §11, the article's §8 limit).

Replica r picked user w at its meter S_w (its smallest (S, user id) among r's waiting
users). One SFQ over every replica picks the smallest (S, user id) among everyone
waiting anywhere, so each user x waiting on another replica with (S_x, x) < (S_w, w) would
have gone before w; it is ``S_w - S_x`` cost units (meters count c / w) behind w. Under
share global there is one SFQ: nobody waiting anywhere is below the pick, by construction.
The winner's own requests on other replicas are left out: under one SFQ they are its queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from sfqtui.core.events import DISPATCH
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.log.timeline import Timeline
from sfqtui.core.numbers import amount, count


@dataclass(frozen=True)
class Elsewhere:
    """A user waiting on another replica with a smaller meter than the pick."""

    user: str
    replica: int
    meter: float
    below: float  # the winner's meter minus this user's, in cost units (c / w)
    queued: int


@dataclass(frozen=True)
class AcrossReplicas:
    """The replica that held dispatch ``k``'s request and who elsewhere was below its pick.
    ``meter`` is the winner's meter at the pick (None: the scheduler keeps no meters, so
    there is nothing to compare)."""

    k: int
    user: str
    replica: int
    share: str
    meter: float | None
    elsewhere: tuple[Elsewhere, ...]

    @property
    def one_scheduler(self) -> bool:
        return self.share == "global"

    def summary(self, shown: int = 3) -> str:
        """In one sentence, for the why panel and explain, naming the first ``shown`` users
        below the pick (0: only how many)."""
        held = f"held on replica {self.replica} (share {self.share})"
        if self.one_scheduler:
            return f"{held}: one SFQ over every replica, so nobody waiting on any replica had a smaller meter"
        if self.meter is None:
            return f"{held}: this scheduler keeps no meters to compare across replicas"
        if not self.elsewhere:
            return f"{held}: no user waiting on another replica had a meter below {self.user}'s {amount(self.meter)}"
        users = "user" if len(self.elsewhere) == 1 else "users"
        told = (f"{held}: under one SFQ, {count(len(self.elsewhere))} {users} waiting on other replicas had smaller meters "
                f"than {self.user}'s {amount(self.meter)} and would have gone first")
        if not shown:
            return told
        names = ", ".join(f"{e.user} on {e.replica} ({amount(e.below)} below)" for e in self.elsewhere[:shown])
        more = f" and {count(len(self.elsewhere) - shown)} more" if len(self.elsewhere) > shown else ""
        return f"{told}: {names}{more}"


def across_replicas(timeline: Timeline, replicas: ReplicaStates, k: int) -> AcrossReplicas | None:
    """For dispatch k of a replicated log, the replica that held it and the users waiting on
    the others just before it with smaller meters, smallest first (None: not a dispatch, or
    a log of one scheduler)."""
    table = timeline.table
    if not 0 <= k < len(table) or table.kind[k] != DISPATCH:
        return None
    held = table.replica_of(k)
    if held is None:
        return None
    settings = replicas.settings
    share = str(settings.share) if settings is not None else "none"
    winner = table.user[k]
    name = table.users[winner]
    traits = table.traits
    if traits is None or not traits.picks_smallest:
        return AcrossReplicas(k, name, held, share, None, ())
    overall = None if replicas.split else timeline.state_at(k - 1)
    meter = replicas.state_at(held, k - 1, overall).value[winner]
    found: list[Elsewhere] = []
    for r in range(replicas.count):
        if r == held:
            continue
        state = replicas.state_at(r, k - 1, overall)
        for u in state.backlogged():
            m = state.value[u]
            if u != winner and (m, table.users[u]) < (meter, name):
                found.append(Elsewhere(table.users[u], r, m, meter - m, state.queued[u]))
    found.sort(key=lambda e: (e.meter, e.user, e.replica))
    return AcrossReplicas(k, name, held, share, meter, tuple(found))
