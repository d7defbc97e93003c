"""The one interface the replay engine, the proxy and the views use for every algorithm."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from copy import copy
from typing import Any

CostOf = Callable[[int], float]
User = Hashable  # a name, or a small int code whose order is the names' order
# Weights by User. Callers key them by names (str) or by codes (int); Mapping keys are
# invariant, so Mapping[Hashable, float] would refuse both.
Weights = Mapping[Any, float]

# What every event row carries from the scheduler: (v, meter, deficit) for the event's user.
UserReading = tuple[float | None, float | None, float | None]
# A dispatch: (request, user, charged cost, v, meter after, deficit after, credit it was sent against).
Dispatch = tuple[int, User, float, float | None, float | None, float | None, float | None]


class Scheduler(ABC):
    """Queues requests per user and picks, one at a time, which to dispatch next.

    Requests are ints (trace indices, or the proxy's own numbers); users are hashable and
    ordered the way their ids are (semantics §3's tie rule). Weights are fixed per user.
    ``backlogged`` counts users with a request queued.
    """

    name: str = ""
    clocked = False  # reads ``now``, which whoever dispatches sets first (LAS's decay)
    now = 0.0

    def __init__(self, weights: Weights | None = None) -> None:
        self._weights = weights or {}
        self._queues: dict[User, deque[int]] = {}
        self.backlogged = 0
        self.offset = 0.0  # what renormalisation has taken out of v and the meters

    def clone(self) -> Scheduler:
        """An independent copy, much cheaper than deepcopy: queues, dicts, lists and
        deques are copied one level down (what they hold is immutable: ints, floats,
        strings, tuples). Empty queues are left out (a missing queue is an empty one), so
        a copy's size follows the backlog, not every user ever seen."""
        twin = copy(self)
        for name, value in vars(self).items():
            if value is self._queues:
                value = {user: deque(queue) for user, queue in value.items() if queue}
            elif isinstance(value, dict):
                value = {key: deque(item) if isinstance(item, deque) else item for key, item in value.items()}
            elif isinstance(value, (list, deque)):
                value = type(value)(value)
            setattr(twin, name, value)
        return twin

    def weight(self, user: User) -> float:
        return self._weights.get(user, 1.0)

    def queued(self, user: User) -> int:
        queue = self._queues.get(user)
        return len(queue) if queue else 0

    def oldest_queued(self) -> int | None:
        """The smallest request number queued (None: nothing is). Requests are numbered in
        the order they arrive and each user's queue keeps that order, so it is a queue's head."""
        return min((queue[0] for queue in self._queues.values() if queue), default=None)

    def _queue(self, user: User) -> deque[int]:
        queue = self._queues.get(user)
        if queue is None:
            queue = self._queues[user] = deque()
        return queue

    def _remove(self, req: int, user: User) -> bool:
        """Take a queued request out of its user's queue; True if that emptied the queue."""
        queue = self._queues.get(user)
        if not queue or req not in queue:
            raise KeyError(f"request {req} is not queued for {user!r}")
        queue.remove(req)
        if queue:
            return False
        self.backlogged -= 1
        return True

    @abstractmethod
    def arrive(self, req: int, user: User) -> UserReading:
        """Queue a request; return the user's reading after the arrival."""

    @abstractmethod
    def dispatch(self, cost_of: CostOf) -> Dispatch:
        """Pick and pop one request; only called while ``backlogged > 0``."""

    @abstractmethod
    def cancel(self, req: int, user: User) -> UserReading:
        """Remove a queued request before dispatch, without any charge (semantics §2)."""

    @abstractmethod
    def reading(self, user: User) -> UserReading:
        """The user's (v, meter, deficit) as it stands."""

    def meter(self, user: User) -> float | None:
        """The user's own number as the log's meter column records it (S_i, C_i), or None."""
        return self.reading(user)[1]

    def complete(self, req: int, user: User, charge: float) -> UserReading:
        """A dispatched request finished; ``charge`` is what its actual usage costs on top
        of the dispatch charge (0 unless the scheduler charges actual usage, like VTC)."""
        return self.reading(user)

    def idle_reset(self) -> float | None:
        """Called right after a dispatch or cancellation left nobody backlogged; returns the new v, if any."""
        return None

    def renormalise(self) -> None:
        """Shift internal numbers to a smaller range without changing any decision."""

    def serving_order(self) -> list[tuple[User, str]] | None:
        """Who is served next, in order, each with a short note (its deficit, its queue),
        for schedulers that serve in an order rather than by the smallest number."""
        return None
