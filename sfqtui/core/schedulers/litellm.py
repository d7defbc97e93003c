"""LiteLLM's request queue (semantics §15): one integer priority, the lower the sooner; first
come, first served within a priority."""

from __future__ import annotations

from heapq import heapify, heappop, heappush

from sfqtui.core.schedulers.banded import Banded
from sfqtui.core.schedulers.base import CostOf, Dispatch, User, UserReading, Weights
from sfqtui.core.schedulers.policy import NO_ATTRIBUTES, RequestAttributes, clone_keeping


class LiteLLM(Banded):
    """One heap of (priority, request) over every user; each row's meter is the user's most
    urgent (lowest) priority still queued, NaN when it has none."""

    name = "litellm"
    lowest_first = True

    def __init__(self, weights: Weights | None = None, attributes: RequestAttributes = NO_ATTRIBUTES) -> None:
        super().__init__(weights)
        self._attributes = attributes
        self._priority = attributes.priority
        self._heap: list[tuple[int, int, User]] = []

    def clone(self) -> LiteLLM:
        return clone_keeping(self, self._attributes)

    def arrive(self, req: int, user: User) -> UserReading:
        priority = self._priority(req)
        queue = self._queue(user)
        if not queue:
            self.backlogged += 1
        queue.append(req)
        heappush(self._heap, (priority, req, user))
        self._hold(user, priority)
        return self.reading(user)

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        priority, req, user = heappop(self._heap)
        self._take(req, user, priority)
        return req, user, cost_of(req), None, self.reading(user)[1], None, None

    def cancel(self, req: int, user: User) -> UserReading:
        entry = next(e for e in self._heap if e[1] == req)
        self._heap.remove(entry)
        heapify(self._heap)
        self._take(req, user, entry[0])
        return self.reading(user)

    def serving_order(self) -> list[tuple[User, str]]:
        return [(user, f"priority {priority}") for priority, _req, user in sorted(self._heap)]
