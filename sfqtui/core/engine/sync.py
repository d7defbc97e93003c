"""What replicas exchange under share sync:T[,D] (semantics §11; docs/semantics.md says why).

Time is cut into windows of T seconds: window n holds the charges of dispatches made at
(n - 1) T <= t < n T. At P_n = n T every replica publishes, per user, the charges c / w
it made in window n (summed in dispatch order); at A_n = n T + D every replica j takes,
per user, the sum over the other replicas k != j (in index order) of what they published,
and raises that user's meter by it. Both the engine and the audit use these functions,
so the windows and the float sums are the same in both.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Hashable

User = Hashable


def window_of(t: float, every: float) -> int:
    """The window n >= 1 a charge at time t belongs to: (n - 1) * every <= t < n * every,
    with the products computed in floating point as written."""
    n = max(1, math.floor(t / every) + 1)
    while n * every <= t:
        n += 1
    while n > 1 and (n - 1) * every > t:
        n -= 1
    return n


@dataclass
class Publication:
    """The charges of window ``window``, per replica and user, applied at ``apply_at``."""

    window: int
    apply_at: float
    charges: list[dict[User, float]] = field(default_factory=list)

    def increments(self, replica: int) -> list[tuple[User, float]]:
        """(user, amount) that ``replica`` adds to its meters: the others' charges summed in
        replica order, users in id order (user codes sort as the names do)."""
        others = [charges for k, charges in enumerate(self.charges) if k != replica]
        users = sorted({user for charges in others for user in charges})  # type: ignore[type-var]  # codes or names, never mixed
        found = []
        for user in users:
            total = 0.0
            for charges in others:
                amount = charges.get(user)
                if amount is not None:
                    total += amount
            found.append((user, total))
        return found


class Exchange:
    """The publications not yet applied, in window order."""

    def __init__(self, replicas: int, every: float, delay: float) -> None:
        self.replicas = replicas
        self.every = every
        self.delay = delay
        self.pending: deque[Publication] = deque()
        self._last_t = -math.inf
        self._last_window = 0

    def charge(self, t: float, replica: int, user: User, amount: float) -> None:
        """A dispatch at time t on ``replica`` charged ``user`` ``amount`` (c / w)."""
        if t != self._last_t:
            self._last_t, self._last_window = t, window_of(t, self.every)
        n = self._last_window
        pending = self.pending
        if not pending or pending[-1].window != n:
            pending.append(Publication(n, n * self.every + self.delay, [{} for _ in range(self.replicas)]))
        charges = pending[-1].charges[replica]
        charges[user] = charges.get(user, 0.0) + amount

    @property
    def next_at(self) -> float:
        """When the next publication applies (infinity: none pending)."""
        return self.pending[0].apply_at if self.pending else math.inf

    def pop(self) -> Publication:
        return self.pending.popleft()
