"""Least attained service (semantics §15): the waiting user who has been served least goes
first, what each user was served decaying by half every ``half_life_s`` seconds; first come,
first served within a user."""

from __future__ import annotations

from heapq import heapify, heappop, heappush, heapreplace

from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading, Weights
from sfqtui.core.schedulers.policy import HALF_LIFE_S, NO_ATTRIBUTES, RequestAttributes

_REBASE_HALVINGS = 256  # rebase once the scale passes 2**256: far from overflow, and rare


class LAS(Scheduler):
    """A user's attained service at time t is sum(cost * 2 ** -((t - t_dispatch) / h)) over its
    dispatches (weighted: cost / weight). It is held as ``scaled`` = attained * 2 ** ((t - base) / h),
    which no time passing changes, so the order of users never needs updating: a backlogged user's
    key changes only when it is charged, as SFQ's meters do. ``now`` is the replay's clock, set by
    whoever dispatches (the loop; the proxy); an arrival moves it to its own time when known. When
    the scale grows past 2**256 every key is halved that many times at once (exact: a power of two)
    and ``base`` moves on. Each row's meter is the user's attained service at ``now``."""

    name = "las"
    clocked = True

    def __init__(self, weights: Weights | None = None, attributes: RequestAttributes = NO_ATTRIBUTES,
                 half_life_s: float = HALF_LIFE_S) -> None:
        super().__init__(weights)
        self._arrival = attributes.arrival
        self.half_life_s = half_life_s
        self.now = 0.0
        self._base = 0.0
        self._scaled: dict[User, float] = {}
        self._heap: list[tuple[float, User]] = []

    def _scale(self) -> float:
        """2 ** ((now - base) / h), after rebasing when it would pass 2**256."""
        halvings = (self.now - self._base) / self.half_life_s
        if halvings > _REBASE_HALVINGS:
            shift = int(halvings)
            factor = 2.0 ** -shift
            self._scaled = {user: value * factor for user, value in self._scaled.items()}
            self._heap = [(value * factor, user) for value, user in self._heap]
            heapify(self._heap)
            self._base += shift * self.half_life_s
            halvings -= shift
        return 2.0 ** halvings

    def attained(self, user: User) -> float:
        """The user's attained service at ``now``."""
        return self._scaled.get(user, 0.0) / self._scale()

    def arrive(self, req: int, user: User) -> UserReading:
        at = self._arrival(req)
        if at is not None and at > self.now:
            self.now = at
        queue = self._queue(user)
        if not queue:
            self.backlogged += 1
            heappush(self._heap, (self._scaled.setdefault(user, 0.0), user))
        queue.append(req)
        return None, self.attained(user), None

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        scale = self._scale()
        scaled, user = self._heap[0]
        queue = self._queues[user]
        req = queue.popleft()
        cost = cost_of(req)
        charged = scaled + cost / self._weights.get(user, 1.0) * scale
        self._scaled[user] = charged
        if queue:
            heapreplace(self._heap, (charged, user))
        else:
            heappop(self._heap)
            self.backlogged -= 1
        return req, user, cost, None, charged / scale, None, None

    def cancel(self, req: int, user: User) -> UserReading:
        if self._remove(req, user):
            self._heap.remove((self._scaled[user], user))
            heapify(self._heap)
        return self.reading(user)

    def reading(self, user: User) -> UserReading:
        return None, self.attained(user), None
