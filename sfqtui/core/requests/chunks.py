"""Requests handed to the engine a chunk at a time, so a replay never holds the whole trace.

A replay reads ``chunks()`` once to run, and once more beforehand when it needs a
figure over all requests (DRR's default quantum, the renormalisation check), so it
must be possible to iterate it more than once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from sfqtui.core.requests.trace import Trace


class RequestChunk(Protocol):
    @property
    def start(self) -> int:
        """The index of the chunk's first request in the whole trace."""

    @property
    def trace(self) -> Trace:
        """The chunk's requests in replay order; user, model and upstream codes are the same in every chunk."""


class RequestChunks(Protocol):
    """A trace as consecutive chunks in replay order: every chunk but the last holds the
    same number of requests, and none is empty."""

    @property
    def users(self) -> Sequence[str]:
        """Every user, sorted: user codes index this."""

    @property
    def upstreams(self) -> Sequence[str]:
        """Every upstream a recording names, sorted: upstream codes index this."""

    @property
    def columns(self) -> frozenset[str]:
        """The optional columns (``trace.OPTIONAL_COLUMNS``) the requests have."""

    def __len__(self) -> int: ...

    def weights_by_code(self) -> dict[int, float]: ...

    def chunks(self) -> Iterable[RequestChunk]: ...


@dataclass(frozen=True)
class WholeTrace:
    """A trace held in memory, as RequestChunks of one chunk (which it also is)."""

    trace: Trace
    start: int = 0

    @property
    def users(self) -> Sequence[str]:
        return self.trace.users

    @property
    def upstreams(self) -> Sequence[str]:
        return self.trace.upstreams

    @property
    def columns(self) -> frozenset[str]:
        return self.trace.columns

    def __len__(self) -> int:
        return len(self.trace)

    def weights_by_code(self) -> dict[int, float]:
        return self.trace.weights_by_code()

    def chunks(self) -> tuple[WholeTrace, ...]:
        return (self,) if len(self.trace) else ()
