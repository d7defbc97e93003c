"""NVIDIA Dynamo's router queue (semantics §15): strict priority tiers, the higher first; then
weighted deficit round-robin across policy classes, a request costing max(1, its uncached input
tokens); first come, first served within a class."""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Mapping
from heapq import heapify, heappop, heappush

from sfqtui.core.schedulers.banded import Banded
from sfqtui.core.schedulers.base import CostOf, Dispatch, User, UserReading, Weights
from sfqtui.core.schedulers.policy import NO_ATTRIBUTES, RequestAttributes, clone_keeping

Entry = tuple[int, int, User]  # (-tier, request, user): a class's heap serves its highest tier, then its oldest


class Dynamo(Banded):
    """Each class has a heap of its requests, a deficit and a quantum (``quantum`` times its
    weight). A dispatch considers the classes whose head is in the highest tier waiting: the
    class that kept credit after its last dispatch goes on if its head still fits; otherwise a
    ring pass from the class after the last one served, each visited class earning its quantum
    until a head fits; if none does, the fewest whole rounds that make one fit are granted to
    every candidate at once (Dynamo's fast-forward). Serving a class spends its head's cost; a
    class left empty drops its deficit. Dispatch rows carry the deficit the request was sent
    against (``credit``, in tokens); each row's meter is the user's highest tier queued."""

    name = "dynamo"

    def __init__(self, weights: Weights | None = None, attributes: RequestAttributes = NO_ATTRIBUTES,
                 class_weights: Mapping[str, float] | None = None, quantum: float = 1024.0) -> None:
        super().__init__(weights)
        self._attributes = attributes
        self._tier, self._class, self._tokens = attributes.priority, attributes.policy_class, attributes.tokens
        self._class_weights = dict(class_weights or {})
        self.quantum = quantum
        self._ring: list[str] = []  # every class seen, in name order
        self._heaps: dict[str, list[Entry]] = {}
        self._deficits: dict[str, float] = {}
        self._after: str | None = None  # the ring pass starts after this class (the one served last)
        self._carry: str | None = None  # the class that kept credit after its last dispatch

    def clone(self) -> Dynamo:
        return clone_keeping(self, self._attributes)

    def class_quantum(self, name: str) -> float:
        return self.quantum * self._class_weights.get(name, 1.0)

    def arrive(self, req: int, user: User) -> UserReading:
        tier, name = self._tier(req), self._class(req)
        queue = self._queue(user)
        if not queue:
            self.backlogged += 1
        queue.append(req)
        heap = self._heaps.get(name)
        if heap is None:
            heap = self._heaps[name] = []
            self._deficits[name] = 0.0
            insort(self._ring, name)
        heappush(heap, (-tier, req, user))
        self._hold(user, tier)
        return self.reading(user)

    def cost(self, req: int, cost_of: CostOf) -> float:
        """Dynamo's scheduling cost: max(1, uncached input tokens); the dispatch's cost when tokens are unknown."""
        tokens = self._tokens(req)
        return cost_of(req) if tokens is None else max(1.0, tokens)

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        heaps, deficits = self._heaps, self._deficits
        top = min(heap[0][0] for heap in heaps.values() if heap)
        costs = {name: self.cost(heap[0][1], cost_of) for name, heap in heaps.items() if heap and heap[0][0] == top}
        carry, self._carry = self._carry, None
        if carry is not None and carry in costs and costs[carry] <= deficits[carry]:
            return self._serve(carry, cost_of)
        ring = self._ring
        start = 0 if self._after is None else bisect_right(ring, self._after)
        order = [ring[(start + i) % len(ring)] for i in range(len(ring))]
        for name in order:
            if name not in costs:
                continue
            if costs[name] <= deficits[name]:
                return self._serve(name, cost_of)
            deficits[name] += self.class_quantum(name)
            if costs[name] <= deficits[name]:
                return self._serve(name, cost_of)
        needed = {name: math.ceil((costs[name] - deficits[name]) / self.class_quantum(name)) for name in costs}
        rounds = min(needed.values())
        for name in costs:
            deficits[name] += rounds * self.class_quantum(name)
        return self._serve(next(name for name in order if name in costs and needed[name] == rounds), cost_of)

    def _serve(self, name: str, cost_of: CostOf) -> Dispatch:
        heap = self._heaps[name]
        minus_tier, req, user = heappop(heap)
        credit = self._deficits[name]
        self._deficits[name] = 0.0 if not heap else max(0.0, credit - self.cost(req, cost_of))
        if heap and self._deficits[name] > 0:
            self._carry = name
        self._after = name
        self._take(req, user, -minus_tier)
        return req, user, cost_of(req), None, self.reading(user)[1], None, credit

    def cancel(self, req: int, user: User) -> UserReading:
        name = self._class(req)
        heap = self._heaps[name]
        entry = next(e for e in heap if e[1] == req)
        heap.remove(entry)
        heapify(heap)
        if not heap:
            self._deficits[name] = 0.0
        self._take(req, user, -entry[0])
        return self.reading(user)

    def deficit(self, name: str) -> float:
        return self._deficits.get(name, 0.0)

    def serving_order(self) -> list[tuple[User, str]]:
        """Each class's head in ring order from after the class served last."""
        ring = self._ring
        start = 0 if self._after is None else bisect_right(ring, self._after)
        order = []
        for name in ring[start:] + ring[:start]:
            heap = self._heaps[name]
            if heap:
                order.append((heap[0][2], f"class {name}, tier {-heap[0][0]}, deficit {self._deficits[name]:,.0f}/{self.class_quantum(name):,.0f}"))
        return order
