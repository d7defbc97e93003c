"""The chunks a replay can still mention, reached by a request's index in the whole trace."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sfqtui.core.requests.chunks import RequestChunk
from sfqtui.core.requests.trace import Trace


class RequestWindow:
    """Chunk k holds requests [k * size, k * size + its length): request r is row
    ``r % size`` of ``traces[r // size]``.

    A chunk enters when the replay reaches its first arrival and leaves once its last
    request has completed: at each hand-over a loop retires, with ``retire_below``, the
    chunks below the oldest request still in the system, which costs the loop nothing per
    request. A retired chunk is kept until ``held()`` hands it over with the rows that
    mention it.
    """

    def __init__(self) -> None:
        self.size = 1
        self.traces: list[Trace | None] = []
        self.services: list[Sequence[float] | None] = []
        self._chunks: list[RequestChunk | None] = []
        self._retired: list[RequestChunk] = []
        self._last_length = 0
        self._first_held = 0  # the oldest chunk retire_below has not retired

    def add(self, chunk: RequestChunk, service: Sequence[float]) -> None:
        k = len(self._chunks)
        length = len(chunk.trace)
        if k == 0:
            self.size = length
        if not length or length > self.size or (k and self._last_length != self.size):
            raise ValueError("request chunks must all hold the same number of requests (the last may hold fewer), none empty")
        if chunk.start != k * self.size:
            raise ValueError(f"request chunk {k} starts at request {chunk.start}, expected {k * self.size}")
        self._chunks.append(chunk)
        self.traces.append(chunk.trace)
        self.services.append(service)
        self._last_length = length

    def retire_below(self, oldest: int) -> range:
        """Retire, oldest first, every chunk whose requests all lie below request ``oldest``;
        returns the indexes of the chunks it retired."""
        chunks, first = self._chunks, self._first_held
        k = first
        while k < len(chunks) and (chunk := chunks[k]) is not None and chunk.start + len(chunk.trace) <= oldest:
            self._retired.append(chunk)
            chunks[k] = self.traces[k] = self.services[k] = None
            k += 1
        self._first_held = k
        return range(first, k)

    def row(self, req: int) -> tuple[Trace, int]:
        """The chunk holding request ``req``, and its row there (the engine's hot paths inline this)."""
        size = self.size
        trace = self.traces[req // size]
        assert trace is not None, "a chunk retires only once its last request has completed"
        return trace, req % size

    def held(self) -> list[RequestChunk]:
        """Every chunk the rows since the last call can mention, in order; forgets the retired ones."""
        held = self._retired + [c for c in self._chunks if c is not None]
        self._retired = []
        held.sort(key=lambda c: c.start)
        return held

    def cost_column(self) -> Callable[[int], float]:
        """The cost column by request index, for chunks added since (the first must be in)."""
        traces, size = self.traces, self.size

        def cost(req: int) -> float:
            return traces[req // size].cost[req % size]  # type: ignore[union-attr,index]  # hot path: the chunk of a request being priced is in the window, and a cost column is why this is used

        return cost
