"""The baselines of semantics §5: global FIFO and per-request round robin."""

from __future__ import annotations

from collections import deque

from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading, Weights

_NO_READING: UserReading = (None, None, None)


class FIFO(Scheduler):
    """Global arrival order, whoever sent it."""

    name = "fifo"

    def __init__(self, weights: Weights | None = None) -> None:
        super().__init__(weights)
        self._line: deque[tuple[int, User]] = deque()

    def arrive(self, req: int, user: User) -> UserReading:
        queue = self._queue(user)
        if not queue:
            self.backlogged += 1
        queue.append(req)
        self._line.append((req, user))
        return _NO_READING

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        req, user = self._line.popleft()
        queue = self._queues[user]
        queue.popleft()
        if not queue:
            self.backlogged -= 1
        return req, user, cost_of(req), None, None, None, None

    def cancel(self, req: int, user: User) -> UserReading:
        self._remove(req, user)
        self._line.remove((req, user))
        return _NO_READING

    def reading(self, user: User) -> UserReading:
        return _NO_READING

    def serving_order(self) -> list[tuple[User, str]]:
        return [(user, "") for _req, user in self._line]


class RoundRobin(Scheduler):
    """One request per backlogged user in turn, in the order users became backlogged; ignores cost."""

    name = "rr"

    def __init__(self, weights: Weights | None = None) -> None:
        super().__init__(weights)
        self._active: deque[User] = deque()

    def arrive(self, req: int, user: User) -> UserReading:
        queue = self._queue(user)
        if not queue:
            self._active.append(user)
            self.backlogged += 1
        queue.append(req)
        return _NO_READING

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        user = self._active.popleft()
        queue = self._queues[user]
        req = queue.popleft()
        if queue:
            self._active.append(user)
        else:
            self.backlogged -= 1
        return req, user, cost_of(req), None, None, None, None

    def cancel(self, req: int, user: User) -> UserReading:
        if self._remove(req, user):
            self._active.remove(user)
        return _NO_READING

    def reading(self, user: User) -> UserReading:
        return _NO_READING

    def serving_order(self) -> list[tuple[User, str]]:
        return [(user, f"{len(self._queues[user])} queued") for user in self._active]
