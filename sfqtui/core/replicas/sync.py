"""What replicas exchange under share sync:T[,D] (semantics §11; docs/semantics.md says why).

Window n is the time (n - 1) T <= t < n T. At P_n = n T, before anything happens at
that time, every replica k publishes, for each user u it has a meter for, its meter
S_k,u and the charges c / w it made to u in window n (summed in dispatch order, Δ_k,u).
Each replica's view of u completed with what the others charged is S_k,u + Σ_{k'≠k} Δ_k',u
(summed in replica order); the published meter of u is the largest of these views, G_u.
At A_n = n T + D (0 <= D < T), after the completions and arrivals at that time and before
any dispatch, every replica j that has a meter for u raises it to G_u + L_j,u if that is
higher, L_j,u being what j charged u since P_n. So every replica counts what u was
charged anywhere, and no replica keeps u below where another one has it.

Only users with an event (an arrival, a dispatch, a raised meter) since the last
publication are published: for any other user every replica already holds the same meter.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

User = Hashable
U = TypeVar("U", bound=Hashable)


def window_of(t: float, every: float) -> int:
    """The window n >= 1 holding time t: (n - 1) * every <= t < n * every, the products
    computed in floating point as written."""
    n = max(1, math.floor(t / every) + 1)
    while n * every <= t:
        n += 1
    while n > 1 and (n - 1) * every > t:
        n -= 1
    return n


def published_meters(users: Sequence[U], meters: Sequence[Mapping[U, float]], charges: Sequence[Mapping[U, float]]) -> dict[U, float]:
    """G_u for each of ``users`` that some replica has a meter for (users in id order);
    ``meters[k]`` and ``charges[k]``: replica k's meters and its charges in the window."""
    found: dict[U, float] = {}
    replicas = range(len(meters))
    for user in users:
        charged = [charges[k].get(user) for k in replicas]
        best: float | None = None
        for k in replicas:
            meter = meters[k].get(user)
            if meter is None:
                continue
            for other in replicas:
                amount = charged[other]
                if amount is not None and other != k:
                    meter += amount
            if best is None or meter > best:
                best = meter
        if best is not None:
            found[user] = best
    return found


@dataclass
class Publication:
    """The meters published at ``window`` * T, to be applied at ``apply_at``."""

    window: int
    apply_at: float
    meters: dict[User, float]


class Exchange:
    """The engine's side: the charges and the users touched since the last publication,
    and the publication waiting to be applied (at most one, since D < T)."""

    def __init__(self, replicas: int, every: float, delay: float) -> None:
        self.replicas = replicas
        self.every = every
        self.delay = delay
        self.window = 1  # the window being filled; it is published at publish_at = window * every
        self.publish_at = every
        self.charges: list[dict[User, float]] = [{} for _ in range(replicas)]
        self.touched: set[User] = set()
        self.pending: Publication | None = None
        self.due = every  # the earliest of publish_at and the pending publication's time

    def _moved(self) -> None:
        self.publish_at = self.window * self.every
        self.due = self.publish_at if self.pending is None else min(self.publish_at, self.pending.apply_at)

    def charge(self, replica: int, user: User, amount: float) -> None:
        charges = self.charges[replica]
        charges[user] = charges.get(user, 0.0) + amount
        self.touched.add(user)

    def publish(self, meters: Sequence[Mapping[User, float]], now: float) -> None:
        """Publish the window ending at ``publish_at`` (<= now); a quiet stretch with nobody
        touched publishes nothing, and the next window to publish is the one holding ``now``."""
        if self.touched:
            users = sorted(self.touched)  # type: ignore[type-var]  # user codes, never mixed with names
            self.pending = Publication(self.window, self.window * self.every + self.delay, published_meters(users, meters, self.charges))
            self.charges = [{} for _ in range(self.replicas)]
            self.touched = set()
            self.window += 1
        else:
            self.window = window_of(now, self.every)  # every window up to now was quiet: nothing to publish
        self._moved()

    def take(self) -> Publication:
        """The pending publication, now applied: the targets G_u + L_j,u come from ``charges``."""
        publication = self.pending
        assert publication is not None
        self.pending = None
        self._moved()
        return publication
