"""The one interface the replay engine and the views use for every algorithm."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

CostOf = Callable[[int], float]

# What every event row carries from the scheduler: (v, meter, deficit) for the event's user.
UserReading = tuple[float | None, float | None, float | None]
# A dispatch: (request, user, charged cost, v, meter after, deficit after).
Dispatch = tuple[int, str, float, float | None, float | None, float | None]


@dataclass(frozen=True)
class UserView:
    user: str
    queued: int
    weight: float
    meter: float | None = None
    deficit: float | None = None


@dataclass(frozen=True)
class SchedulerView:
    """A scheduler's state as a view draws it.

    SFQ fills ``v`` and each user's ``meter``; DRR fills ``order`` (the active list),
    ``pointer`` (the user being visited), ``quantum`` and each user's ``deficit``;
    RR fills ``order``. ``users`` lists every user seen so far, sorted by id.
    """

    scheduler: str
    users: tuple[UserView, ...]
    v: float | None = None
    order: tuple[str, ...] = ()
    pointer: str | None = None
    quantum: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


class Scheduler(ABC):
    """Queues requests per user and picks, one at a time, which to dispatch next.

    Requests are trace indices (ints); users are ids. Weights are fixed per user.
    """

    name: str = ""
    has_virtual_time = False

    def __init__(self, weights: dict[str, float] | None = None) -> None:
        self._weights = weights or {}
        self._queues: dict[str, deque[int]] = {}
        self.backlogged = 0

    def weight(self, user: str) -> float:
        return self._weights.get(user, 1.0)

    def queued(self, user: str) -> int:
        queue = self._queues.get(user)
        return len(queue) if queue else 0

    def _queue(self, user: str) -> deque[int]:
        queue = self._queues.get(user)
        if queue is None:
            queue = self._queues[user] = deque()
        return queue

    @abstractmethod
    def arrive(self, req: int, user: str) -> UserReading:
        """Queue a request; return the user's reading after the arrival."""

    @abstractmethod
    def dispatch(self, cost_of: CostOf) -> Dispatch:
        """Pick and pop one request; only called while ``backlogged > 0``."""

    @abstractmethod
    def reading(self, user: str) -> UserReading:
        """The user's (v, meter, deficit) as it stands."""

    def idle_reset(self) -> float | None:
        """Called right after a dispatch left nobody backlogged; returns the new v, if any."""
        return None

    def renormalise(self) -> None:
        """Shift internal numbers to a smaller range without changing any decision."""

    @abstractmethod
    def view(self) -> SchedulerView: ...

    def _user_views(self, meter: Callable[[str], float | None], deficit: Callable[[str], float | None]) -> tuple[UserView, ...]:
        return tuple(
            UserView(u, len(q), self.weight(u), meter(u), deficit(u)) for u, q in sorted(self._queues.items())
        )
