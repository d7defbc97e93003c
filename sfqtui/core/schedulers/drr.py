"""Deficit Round Robin (semantics §4, article §4)."""

from __future__ import annotations

from collections import deque

from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, SchedulerView, UserReading


class DRR(Scheduler):
    """An active list in the order users became backlogged, a deficit per user, quantum Q.

    Visits are resumable: a visit that still has credit when no slot is free goes on at
    the next dispatch without a new quantum. ``credit_used[k]`` is the deficit the k-th
    dispatch was sent against, so a log can show that no request exceeded it.
    """

    name = "drr"

    def __init__(self, quantum: float, weights: dict[str, float] | None = None) -> None:
        if not quantum > 0:
            raise ValueError("DRR quantum must be > 0")
        super().__init__(weights)
        self.quantum = quantum
        self._active: deque[str] = deque()
        self._deficits: dict[str, float] = {}
        self._visiting: str | None = None
        self.credit_used: list[float] = []

    def arrive(self, req: int, user: str) -> UserReading:
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
                self.credit_used.append(credit)
                if queue:
                    deficits[user] = credit - cost
                else:
                    deficits[user] = 0.0
                    self._active.popleft()
                    self._visiting = None
                    self.backlogged -= 1
                return req, user, cost, None, None, deficits[user]
            self._active.rotate(-1)
            self._visiting = None

    def reading(self, user: str) -> UserReading:
        return None, None, self._deficits.get(user)

    def view(self) -> SchedulerView:
        return SchedulerView(
            scheduler=self.name,
            users=self._user_views(lambda _u: None, self._deficits.get),
            order=tuple(self._active),
            pointer=self._visiting,
            quantum=self.quantum,
        )
