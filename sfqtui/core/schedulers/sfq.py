"""Start-time Fair Queueing (semantics §3, article §2) and the `sfq-reset` teaching variant."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from heapq import heapify, heappop, heappush, heapreplace

from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading, Weights


class SFQ(Scheduler):
    """Meters S_i, virtual time v, one FIFO per user.

    Backlogged users sit in a heap keyed by (S_i, user id): a backlogged user's meter
    only changes when it is picked, so the heap never holds stale entries and each
    decision is O(log T). Python compares floats exactly and strings by code point,
    which is the tie rule of semantics §3.
    """

    name = "sfq"
    reset_join = False

    def __init__(self, weights: Weights | None = None) -> None:
        super().__init__(weights)
        self.v = 0.0
        self._meters: dict[User, float] = {}
        self._heap: list[tuple[float, User]] = []
        self._max_meter = 0.0
        self._join_at_v = self.reset_join  # an instance attribute: looked up on each join, and 3.11 only specialises those

    def arrive(self, req: int, user: User) -> UserReading:
        queue = self._queues.get(user)
        if queue is None:
            queue = self._queue(user)
        if queue:
            queue.append(req)
            return self.v, self._meters[user], None
        # The join rule max(S_i, v) (a new user starts at v); sfq-reset joins at v.
        v = self.v
        meter = self._meters.get(user)
        if meter is None or meter < v or self._join_at_v:
            meter = v
        self._meters[user] = meter
        if meter > self._max_meter:
            self._max_meter = meter
        heappush(self._heap, (meter, user))
        self.backlogged += 1
        queue.append(req)
        return v, meter, None

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        heap = self._heap
        meter, user = heap[0]
        self.v = meter
        queue = self._queues[user]
        req = queue.popleft()
        cost = cost_of(req)
        if self._weights:
            charged = meter + cost / self._weights.get(user, 1.0)
        else:
            charged = meter + cost
        self._meters[user] = charged
        if charged > self._max_meter:
            self._max_meter = charged
        if queue:
            heapreplace(heap, (charged, user))  # one sift, where a pop and a push take two
        else:
            heappop(heap)
            self.backlogged -= 1
        return req, user, cost, meter, charged, None, None

    def cancel(self, req: int, user: User) -> UserReading:
        if self._remove(req, user):
            self._heap.remove((self._meters[user], user))
            heapify(self._heap)
        return self.reading(user)

    def reading(self, user: User) -> UserReading:
        return self.v, self._meters.get(user), None

    def meter(self, user: User) -> float | None:
        return self._meters.get(user)

    @property
    def meters(self) -> Mapping[User, float]:
        """Every user's meter, read only (replicas under share sync publish them)."""
        return self._meters

    def raise_meters(self, targets: Sequence[tuple[User, float]]) -> list[tuple[User, float]]:
        """Raise meters to what another replica's scheduler has them at, as a replica under
        share sync does (semantics §11): a user this scheduler has a meter for and whose
        target is higher gets the target; a user it has never seen is left to join at v,
        as a new user does. v does not move. Returns (user, new meter) of each meter raised."""
        meters, queues = self._meters, self._queues
        moved_backlogged = False
        moved = []
        for user, target in targets:
            meter = meters.get(user)
            if meter is None or not target > meter:
                continue
            meters[user] = target
            if target > self._max_meter:
                self._max_meter = target
            moved.append((user, target))
            if queues.get(user):
                moved_backlogged = True
        if moved_backlogged:
            self._heap = [(meters[user], user) for _, user in self._heap]
            heapify(self._heap)
        return moved

    def idle_reset(self) -> float:
        if self._max_meter > self.v:
            self.v = self._max_meter
        return self.v

    def renormalise(self) -> None:
        """Subtract from v and every meter an amount d <= v for which each subtraction is exact.

        d is v rounded down to a multiple of the largest ulp among the numbers held, so
        every meter >= d shifts exactly and keeps its order; meters below d (users idle
        since before v passed them) can only round towards each other, and the join rule
        maps all of them to v anyway. docs/semantics.md says what this can and cannot
        promise once later charges are not exactly representable.
        """
        largest = max(abs(self._max_meter), abs(self.v))
        if largest == 0.0:
            return
        grain = math.ulp(largest)
        d = math.floor(self.v / grain) * grain
        if d <= 0.0:
            return
        self.v -= d
        self._max_meter -= d
        self.offset += d
        for user, meter in self._meters.items():
            self._meters[user] = meter - d
        self._heap = [(meter - d, user) for meter, user in self._heap]
        heapify(self._heap)


class SFQReset(SFQ):
    """`sfq-reset`: the join rule S_i <- v, which opens the loophole of article §2.4 and §3.3."""

    name = "sfq-reset"
    reset_join = True
