"""The servers behind the slots: the seam between a replay's loop and what serves a dispatched
request until it completes.

``FixedService`` holds each request for its service time (semantics §2); the engine model
(``sfqtui.core.engines.servers.EngineServers``) queues it at an engine that batches. Servers
whose slots change over time have a ``Capacity``: the engines' limits under ``--slots auto``,
or a recorded capacity. The loop adds each change to the one pool's free slots: a lower
capacity never preempts, it only holds dispatches back until enough requests complete.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from heapq import heappop, heappush
from typing import Protocol

from sfqtui.core.pricing.service import TokenServiceModel, service_times
from sfqtui.core.requests.trace import Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers.base import User

INF = float("inf")
# A request served, as the servers hand back one that completed or started running (a start row): (request, user,
# pool, replica, prompt tokens, output tokens, prompt blocks, upstream); the loop reads the first four and the
# upstream (-1: the servers name none). The engine model holds each request as this tuple and hands it back as it is.
Served = tuple[int, User, int, int, int, int, Sequence[int] | None, int]
# A limit that changed: (upstream, its new limit, the reason's name in events.REASONS).
Change = tuple[int, int, str]


class Capacity(Protocol):
    """Slots that change over time: ``total`` now, and when the next change is due (``next_t``, INF: none)."""

    total: int
    next_t: float

    def first(self) -> list[Change]:
        """The limits at the start, written before the first arrival."""

    def wake(self, now: float) -> None:
        """A request arrived at ``now`` while no change was due."""

    def stir(self, now: float) -> None:
        """The servers were sent or finished requests at ``now`` while no change was due."""

    def change(self, now: float, busy: bool) -> list[Change]:
        """The changes due at ``now`` (``busy``: requests in flight or waiting); ``total`` and ``next_t`` move."""


class Servers(Protocol):
    """What serves the requests the pools dispatch (see the module's docstring)."""

    @property
    def capacity(self) -> Capacity | None:
        """Slots that change over time (None: the pools' fixed slots)."""

    def entering(self, trace: Trace) -> Sequence[float]:
        """What the window keeps for a chunk's requests entering the replay (service times; empty when the servers keep their own)."""

    def retired(self, chunks: range) -> None:
        """The window retired these chunks: what the servers kept of them can go."""

    @property
    def next_done(self) -> float:
        """When the next request may complete (INF: none is being served)."""

    def send(self, now: float, req: int, user: User, pool: int, rep: int) -> int:
        """Request ``req`` is dispatched at ``now``: the upstream it went to (-1: none named)."""

    def finish(self, now: float) -> list[Served]:
        """The requests that complete at ``now`` (``next_done``), in the order they complete."""

    def settle(self, now: float) -> list[Served]:
        """After this timestamp's dispatches: the requests that start running at ``now``."""

    def unfinished(self) -> Iterator[int]:
        """The requests sent and not finished."""


class FixedService:
    """Each request holds its slot for its service time from dispatch (semantics §2): a heap of
    (done at, dispatch number, request, user, pool, replica), so completions at one time come in
    dispatch order. The fixed-service loop (``loop.run_fixed``) works this heap itself."""

    capacity: Capacity | None = None

    def __init__(self, model: TokenServiceModel, window: RequestWindow) -> None:
        self.model = model
        self.window = window
        self.running: list[tuple[float, int, int, User, int, int]] = []
        self.sent = 0

    def entering(self, trace: Trace) -> Sequence[float]:
        return service_times(trace, self.model)

    def retired(self, chunks: range) -> None:
        pass  # the service times are the window's

    @property
    def next_done(self) -> float:
        return self.running[0][0] if self.running else INF

    def send(self, now: float, req: int, user: User, pool: int, rep: int) -> int:
        window = self.window
        service = window.services[req // window.size][req % window.size]  # type: ignore[index]  # a request just dispatched: its chunk is held
        heappush(self.running, (now + service, self.sent, req, user, pool, rep))
        self.sent += 1
        return -1

    def finish(self, now: float) -> list[Served]:
        running = self.running
        done: list[Served] = []
        while running and running[0][0] == now:
            _, _, req, user, pool, rep = heappop(running)
            done.append((req, user, pool, rep, 0, 0, None, -1))
        return done

    def settle(self, now: float) -> list[Served]:
        return []  # a request runs from its dispatch

    def unfinished(self) -> Iterator[int]:
        return (entry[2] for entry in self.running)
