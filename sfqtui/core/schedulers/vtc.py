"""Virtual Token Counter at the ordering layer (semantics §9, article §6.2)."""

from __future__ import annotations

from heapq import heappop, heappush

from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading, Weights


class VTC(Scheduler):
    """A counter C_i per user: the input is charged at dispatch, the actual output at completion.

    Backlogged users sit in a heap keyed by (C_i, user id). A completion can raise the
    counter of a user who is still backlogged, so entries can go stale; a stale entry
    (its counter moved, or its user is no longer backlogged) is dropped when it reaches
    the top.
    """

    name = "vtc"

    def __init__(self, weights: Weights | None = None) -> None:
        super().__init__(weights)
        self._counters: dict[User, float] = {}
        self._heap: list[tuple[float, User]] = []

    def _smallest(self) -> tuple[float, User] | None:
        """The backlogged user with the smallest (C_i, id), if any."""
        heap, counters, queues = self._heap, self._counters, self._queues
        while heap:
            counter, user = heap[0]
            if queues.get(user) and counters[user] == counter:
                return heap[0]
            heappop(heap)
        return None

    def arrive(self, req: int, user: User) -> UserReading:
        queue = self._queue(user)
        if not queue:
            counter = self._counters.get(user, 0.0)
            lowest = self._smallest()  # the user is not backlogged, so this is another user
            if lowest is not None and lowest[0] > counter:
                counter = lowest[0]
            self._counters[user] = counter
            heappush(self._heap, (counter, user))
            self.backlogged += 1
        queue.append(req)
        return None, self._counters[user], None

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        smallest = self._smallest()
        assert smallest is not None, "dispatch is only called while someone is backlogged"
        counter, user = smallest
        heappop(self._heap)
        queue = self._queues[user]
        req = queue.popleft()
        cost = cost_of(req)
        counter += cost / self._weights.get(user, 1.0)
        self._counters[user] = counter
        if queue:
            heappush(self._heap, (counter, user))
        else:
            self.backlogged -= 1
        return req, user, cost, None, counter, None, None

    def complete(self, req: int, user: User, charge: float) -> UserReading:
        counter = self._counters[user] + charge / self._weights.get(user, 1.0)
        self._counters[user] = counter
        if self.queued(user):
            heappush(self._heap, (counter, user))
        return None, counter, None

    def cancel(self, req: int, user: User) -> UserReading:
        self._remove(req, user)  # a stale heap entry is dropped when it reaches the top
        return self.reading(user)

    def reading(self, user: User) -> UserReading:
        return None, self._counters.get(user), None

    def counter(self, user: User) -> float | None:
        return self._counters.get(user)
