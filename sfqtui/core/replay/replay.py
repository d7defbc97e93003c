"""The replay engine of semantics §2: a trace, a scheduler, slots and servers in; §7 events out.

A replay is a pure function of (trace, scheduler, slots, estimator, service model or engines):
no clock, no randomness, no dict-order dependence.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace

from sfqtui.core.engines.pool import EnginePool
from sfqtui.core.events import DISPATCH, START, EventColumns, EventRows
from sfqtui.core.pricing.estimator import Pricing
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.loop import run_fixed, run_served
from sfqtui.core.replay.plan import ReplayPlan
from sfqtui.core.replay.servers import FixedService
from sfqtui.core.requests.chunks import RequestChunk, RequestChunks
from sfqtui.core.requests.trace import Trace

CHUNK = 1 << 16


@dataclass(frozen=True)
class Drained:
    """Rows handed over by a replay: the ``rows`` drained from its log, the request chunks they can
    mention (``requests``, in order), what priced their dispatches (None: no estimator), the
    number of requests arrived so far, and the cached prompt tokens of the requests that started
    and when each made its first token (None: the engines model no prefix cache, semantics §14)."""

    rows: EventRows
    requests: list[RequestChunk]
    pricing: Pricing | None
    arrived: int
    cached: dict[int, int] | None = None
    first_token: dict[int, float] | None = None

    def columns(self) -> EventColumns:
        """The rows as columns, with the ratio and estimated output that priced each dispatch when an estimator did."""
        columns = self.rows.columns()
        if self.cached is not None:
            cached = self.cached
            columns.cached_tokens = [cached.get(req) if kind == START else None for kind, req in zip(columns.kind, columns.req)]
        if self.first_token is not None:
            first = self.first_token
            columns.first_token_t = [first.get(req) if kind == START else None for kind, req in zip(columns.kind, columns.req)]
        pricing = self.pricing
        if pricing is None:
            return columns
        ratio = [pricing.ratio.get(req) if kind == DISPATCH else None for kind, req in zip(columns.kind, columns.req)]
        est_output = [pricing.est_output.get(req) if kind == DISPATCH else None for kind, req in zip(columns.kind, columns.req)]
        return replace(columns, ratio=ratio, est_output=est_output)


class Replay:
    """Replays a trace under one scheduler, or under several replicas when the config says
    so (semantics §11), on fixed service times or the engine model, and fills an event log.

    The trace is a whole ``Trace`` or ``RequestChunks`` read a chunk at a time; either way
    the events are the same, and a request's data is reached through the replay's window,
    which holds only the chunks of requests still in the system. Everything decided before
    the first event is its ``plan`` (built here: InputError for a setting the trace cannot be
    replayed with). ``drained()`` is the way to consume a replay: the rows a chunk at a time,
    with their pricing; ``chunks()`` and ``run_all()`` give them as columns.
    """

    def __init__(self, trace: Trace | RequestChunks, config: ReplayConfig) -> None:
        self.plan = plan = ReplayPlan(trace, config)
        self.config = config
        self.requests, self.window, self.traits = plan.requests, plan.window, plan.traits
        self.cost_source, self.service_source, self.quantum = plan.cost_source, plan.service_source, plan.quantum
        self.estimator, self.estimators = plan.estimator, plan.estimators
        self.schedulers, self.scheduler, self.pool_slots = plan.schedulers, plan.scheduler, plan.pool_slots
        self.log, self.group = plan.log, plan.group
        self.dispatched = 0

    def run(self, chunk: int = CHUNK) -> Iterator[int]:
        """Replay to the end, yielding the number of requests arrived every ``chunk`` events (and
        at the end), with the rows since the last yield in ``log``: whoever drains it must also
        take the requests and the pricing (``drained()`` does all three)."""
        servers = self.plan.servers
        loop = (run_fixed(self.plan, servers, chunk) if isinstance(servers, FixedService) and servers.capacity is None
                else run_served(self.plan, servers, chunk))  # a recorded capacity: the loop of servers whose slots change
        for arrived, dispatched in loop:
            self.dispatched = dispatched
            yield arrived

    def drained(self, chunk: int = CHUNK) -> Iterator[Drained]:
        """Replay to the end, handing over the rows every ``chunk`` events (and the last ones, even
        none) with what they need; nothing is kept after it is handed over."""
        for arrived in self.run(chunk):
            cached, first_token = self.take_cached() or (None, None)
            yield Drained(self.log.drain(), self.take_requests(), self.take_pricing(), arrived, cached, first_token)

    def chunks(self, chunk: int = CHUNK) -> Iterator[tuple[EventColumns, int]]:
        """The drained rows as columns, with the number of requests arrived so far; empty hand-overs left out."""
        for drained in self.drained(chunk):
            if len(drained.rows):
                yield drained.columns(), drained.arrived

    def run_all(self) -> EventColumns:
        """Replay to the end and return every event as columns (small traces and tests): one hand-over."""
        (drained,) = self.drained(sys.maxsize)
        return drained.columns()

    def take_requests(self) -> list[RequestChunk]:
        """The request chunks that the rows drained since the last call can mention, in order."""
        return self.window.held()

    def take_cached(self) -> tuple[dict[int, int], dict[int, float]] | None:
        """The cached prompt tokens of the requests started since the last call and when each
        made its first token (None: no prefix caches)."""
        servers = self.plan.servers
        return servers.take_cached() if isinstance(servers, EnginePool) else None

    def take_pricing(self) -> Pricing | None:
        """What priced the dispatches drained since the last call, over every pool's estimator (None: no estimator)."""
        if self.estimator is None:
            return None
        if len(self.estimators) == 1:
            return self.estimator.take_pricing()
        merged = Pricing({}, {}, {} if self.config.estimator.cache_aware else None)
        for estimator in self.estimators:
            assert estimator is not None  # every pool has one when the first has
            taken = estimator.take_pricing()
            merged.ratio.update(taken.ratio)
            merged.est_output.update(taken.est_output)
            if merged.cached is not None and taken.cached is not None:
                merged.cached.update(taken.cached)
        return merged
