"""Deficit Round Robin (semantics §4, article §4)."""

from __future__ import annotations

from collections import deque

from sfqtui.core.numbers import amount
from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading, Weights


class DRR(Scheduler):
    """An active list in the order users became backlogged, a deficit per user, quantum Q.

    Visits are resumable: a visit that still has credit when no slot is free goes on at
    the next dispatch without a new quantum. Each dispatch reports the deficit it was
    sent against (its credit), so a log can show that no request exceeded it.
    """

    name = "drr"

    def __init__(self, quantum: float, weights: Weights | None = None) -> None:
        if not quantum > 0:
            raise ValueError("DRR quantum must be > 0")
        super().__init__(weights)
        self.quantum = quantum
        self._active: deque[User] = deque()
        self._deficits: dict[User, float] = {}
        self._visiting: User | None = None

    def arrive(self, req: int, user: User) -> UserReading:
        queue = self._queue(user)
        if not queue:
            self._active.append(user)
            self._deficits[user] = 0.0
            self.backlogged += 1
        queue.append(req)
        return None, None, self._deficits[user]

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        deficits = self._deficits
        while True:
            user = self._visiting
            if user is None:
                user = self._active[0]
                deficits[user] += self.quantum * self.weight(user)
                self._visiting = user
            queue = self._queues[user]
            req = queue[0]
            cost = cost_of(req)
            credit = deficits[user]
            if cost <= credit:
                queue.popleft()
                if queue:
                    deficits[user] = credit - cost
                else:
                    deficits[user] = 0.0
                    self._active.popleft()
                    self._visiting = None
                    self.backlogged -= 1
                return req, user, cost, None, None, deficits[user], credit
            self._active.rotate(-1)
            self._visiting = None

    def cancel(self, req: int, user: User) -> UserReading:
        if self._remove(req, user):
            self._active.remove(user)
            self._deficits[user] = 0.0
            if self._visiting == user:
                self._visiting = None
        return self.reading(user)

    def reading(self, user: User) -> UserReading:
        return None, None, self._deficits.get(user)

    def serving_order(self) -> list[tuple[User, str]]:
        """The active list, each user with deficit / quantum; the visit in progress is marked."""
        return [(user, f"{'visiting, ' if user == self._visiting else ''}DC {amount(self._deficits[user])}/Q {amount(self.quantum * self.weight(user))}")
                for user in self._active]

    def active_list(self) -> list[User]:
        """Backlogged users in visiting order, the one being visited first."""
        return list(self._active)

    @property
    def visiting(self) -> User | None:
        """The user whose visit is in progress (resumes at the next dispatch), if any."""
        return self._visiting
