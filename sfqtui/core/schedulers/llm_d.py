"""llm-d's flow control (the Gateway API Inference Extension's, semantics §15): priority bands
served strictly, the higher first; round-robin across the flows waiting in a band; first come,
first served (or earliest deadline first) within a flow."""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import deque
from heapq import heapify, heappop, heappush

from sfqtui.core.schedulers.banded import Banded
from sfqtui.core.schedulers.base import CostOf, Dispatch, User, UserReading, Weights
from sfqtui.core.schedulers.policy import NO_ATTRIBUTES, Flow, RequestAttributes, clone_keeping

Entry = tuple[float, int, User]  # (deadline, or 0 under FCFS; request; user)


class LlmD(Banded):
    """Bands by priority, each with the sorted flows that have a request waiting and a cursor
    (the flow it served last). A dispatch takes the highest band, the first waiting flow after
    its cursor in flow-id order (wrapping), and that flow's oldest request, or under EDF the one
    with the earliest deadline (ties and requests without one: oldest first, those last). Each
    row's meter is the user's highest band still queued (NaN: none)."""

    name = "llm-d"

    def __init__(self, weights: Weights | None = None, attributes: RequestAttributes = NO_ATTRIBUTES, edf: bool = False) -> None:
        super().__init__(weights)
        self._attributes = attributes
        self._priority, self._flow, self._deadline = attributes.priority, attributes.flow, attributes.deadline
        self.edf = edf
        self._bands: dict[int, list[Flow]] = {}  # band -> its flows with a request waiting, sorted
        self._waiting: dict[tuple[int, Flow], deque[Entry] | list[Entry]] = {}  # (band, flow) -> FIFO, or heap under EDF
        self._cursor: dict[int, Flow] = {}  # band -> the flow it served last

    def clone(self) -> LlmD:
        return clone_keeping(self, self._attributes)

    def arrive(self, req: int, user: User) -> UserReading:
        band, flow = self._priority(req), self._flow(req, user)
        queue = self._queue(user)
        if not queue:
            self.backlogged += 1
        queue.append(req)
        key = (band, flow)
        waiting = self._waiting.get(key)
        if waiting is None:
            waiting = self._waiting[key] = [] if self.edf else deque()
            insort(self._bands.setdefault(band, []), flow)
        if self.edf:
            heappush(waiting, (self._deadline(req), req, user))  # type: ignore[arg-type]  # a heap (list) under EDF
        else:
            waiting.append((0.0, req, user))
        self._hold(user, band)
        return self.reading(user)

    def dispatch(self, cost_of: CostOf) -> Dispatch:
        band = max(self._bands)
        flows = self._bands[band]
        last = self._cursor.get(band)
        i = 0 if last is None else bisect_right(flows, last)
        flow = flows[i if i < len(flows) else 0]
        self._cursor[band] = flow
        waiting = self._waiting[band, flow]
        _, req, user = heappop(waiting) if self.edf else waiting.popleft()  # type: ignore[arg-type,union-attr]  # a heap under EDF, else a deque
        if not waiting:
            self._forget(band, flow)
        self._take(req, user, band)
        return req, user, cost_of(req), None, self.reading(user)[1], None, None

    def cancel(self, req: int, user: User) -> UserReading:
        band, flow = self._priority(req), self._flow(req, user)
        waiting = self._waiting[band, flow]
        entry = next(e for e in waiting if e[1] == req)
        waiting.remove(entry)
        if self.edf:
            heapify(waiting)  # type: ignore[arg-type]  # a heap (list) under EDF
        if not waiting:
            self._forget(band, flow)
        self._take(req, user, band)
        return self.reading(user)

    def _forget(self, band: int, flow: Flow) -> None:
        """The flow has nothing left waiting in the band (the cursor stays where it is)."""
        del self._waiting[band, flow]
        flows = self._bands[band]
        del flows[bisect_left(flows, flow)]
        if not flows:
            del self._bands[band]

    def serving_order(self) -> list[tuple[User, str]]:
        """The flows in the order they get their turns: bands from the highest, each from after its cursor."""
        order: list[tuple[User, str]] = []
        for band in sorted(self._bands, reverse=True):
            flows = self._bands[band]
            last = self._cursor.get(band)
            i = 0 if last is None else bisect_right(flows, last)
            for flow in flows[i:] + flows[:i]:
                waiting = self._waiting[band, flow]
                head = min(waiting) if self.edf else waiting[0]
                order.append((head[2], f"band {band}, flow {flow}, {len(waiting)} waiting"))
        return order
