"""The replay engine of semantics §2: slots, same-time ordering, the dispatch loop.

A replay is a pure function of (trace, scheduler, slots, estimator, service model):
no clock, no randomness, no dict-order dependence.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from heapq import heappop, heappush
from typing import Callable, Iterator

from sfqtui.core.engine.estimator import CostEstimator, EstimatorParams
from sfqtui.core.engine.events import ARRIVE, COMPLETE, DISPATCH, IDLE_RESET, EventBuffer, EventColumns
from sfqtui.core.schedulers import DRR, SFQ, Scheduler, make_scheduler
from sfqtui.core.schedulers.base import CostOf, Dispatch, UserReading
from sfqtui.core.engine.service import TokenServiceModel, service_times
from sfqtui.core.engine.trace import Trace


@dataclass(frozen=True)
class ReplayConfig:
    scheduler: str = "sfq"
    slots: int = 1
    quantum: float | None = None
    estimator: EstimatorParams = field(default_factory=EstimatorParams)
    service: TokenServiceModel = field(default_factory=TokenServiceModel)
    renormalise_every: int | None = None

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError("slots must be >= 1")
        if self.quantum is not None and not self.quantum > 0:
            raise ValueError("quantum must be > 0")
        if self.renormalise_every is not None and self.renormalise_every < 1:
            raise ValueError("renormalise_every must be >= 1 dispatch")


class Replay:
    """Replays a trace under one scheduler and fills an event buffer.

    ``run()`` yields after roughly every ``chunk`` events so a caller can report progress
    or drain ``log`` to disk; ``run_all()`` replays to the end.
    """

    def __init__(self, trace: Trace, config: ReplayConfig) -> None:
        self.trace = trace
        self.config = config
        self.estimator: CostEstimator | None = None
        if trace.cost is not None:
            self.cost_of: CostOf = trace.cost.__getitem__
            self.cost_source = "column"
        else:
            self.estimator = CostEstimator(config.estimator, trace)
            self.cost_of = self.estimator.cost
            self.cost_source = "estimator"
        self.service, self.service_source = service_times(trace, config.service)
        self.quantum = config.quantum
        if config.scheduler == "drr" and self.quantum is None:
            self.quantum = self.largest_cost()
        self.scheduler: Scheduler = make_scheduler(config.scheduler, trace.weights, self.quantum)
        if config.renormalise_every and self.scheduler.has_virtual_time:
            self._check_renormalisable()
        self.log = EventBuffer()
        self.dispatched = 0

    def largest_cost(self) -> float:
        """c_max of the trace: the explicit costs, or the most the estimator can charge."""
        if not len(self.trace):
            return 1.0
        if self.trace.cost is not None:
            return max(self.trace.cost)
        assert self.estimator is not None
        return max(self.estimator.upper_bound(i) for i in range(len(self.trace)))

    def _check_renormalisable(self) -> None:
        """Renormalising is only decision-preserving when every sum is exact in both frames.

        Float sums of the same charges round differently once v is subtracted, so a tie in
        one frame can become an order in the other. Sums are exact when every charge is a
        multiple of one power-of-two grid and the total stays below 2^53 grid steps: then
        both frames compute the same numbers, shifted, and every decision is the same.
        """
        trace = self.trace
        if trace.cost is None:
            raise ValueError("--renormalise-every needs explicit costs: estimated costs are not exact in floating point, "
                             "so renormalising could change a decision (docs/semantics.md)")
        largest_denominator, total = 1, 0.0
        for user, cost in zip(trace.user, trace.cost):
            charge = cost / trace.weights.get(user, 1.0)
            denominator = charge.as_integer_ratio()[1]
            if denominator > largest_denominator:
                largest_denominator = denominator
            total += charge
        if largest_denominator > 1 << 30 or total * largest_denominator >= 2.0**53:
            raise ValueError("--renormalise-every needs charges (cost / weight) on one exact grid, such as whole numbers: "
                             "with these costs renormalising could change a decision (docs/semantics.md)")

    def credit_used(self) -> list[float] | None:
        return self.scheduler.credit_used if isinstance(self.scheduler, DRR) else None

    def run_all(self) -> EventColumns:
        """Replay to the end and return every event as columns."""
        for _ in self.run():
            pass
        return self.log.columns()

    def run(self, chunk: int = 1 << 16) -> Iterator[int]:
        """Replay to the end, yielding the number of requests arrived every ``chunk`` events."""
        trace = self.trace
        arrivals = trace.arrival_s
        users = trace.user
        n = len(trace)
        service = self.service
        sched = self.scheduler
        arrive, reading, dispatch, idle_reset = self._operations()
        cost_of = self.cost_of
        observe = self.estimator.observe if self.estimator is not None else None
        virtual = sched.has_virtual_time
        log = self.log
        rows = log.rows
        append = rows.append
        running: list[tuple[float, int, int]] = []
        free = self.config.slots
        i = 0
        dispatched = self.dispatched
        next_yield = log.start + len(rows) + chunk
        collecting = gc.isenabled()
        gc.disable()  # see sfqtui.core.engine.gcpause; restored whenever control returns to the caller
        try:
            never = float("inf")
            next_arrival = arrivals[0] if n else never
            next_done = never
            while next_arrival != never or running:
                now = next_done if next_done <= next_arrival else next_arrival

                while next_done == now:
                    req = heappop(running)[2]
                    next_done = running[0][0] if running else never
                    free += 1
                    if observe is not None:
                        observe(req)
                    v, meter, deficit = reading(users[req])
                    append((now, COMPLETE, req, None, v, meter, deficit))

                while next_arrival == now:
                    v, meter, deficit = arrive(i, users[i])
                    append((now, ARRIVE, i, None, v, meter, deficit))
                    i += 1
                    next_arrival = arrivals[i] if i < n else never

                if free and sched.backlogged:
                    while free and sched.backlogged:
                        req, _user, cost, v, meter, deficit = dispatch(cost_of)
                        append((now, DISPATCH, req, cost, v, meter, deficit))
                        free -= 1
                        heappush(running, (now + service[req], dispatched, req))
                        dispatched += 1
                        if virtual and not sched.backlogged:
                            append((now, IDLE_RESET, -1, None, idle_reset(), None, None))
                    next_done = running[0][0]

                if log.start + len(rows) >= next_yield:
                    self.dispatched = dispatched
                    if collecting:
                        gc.enable()
                    yield i
                    gc.disable()
                    rows = log.rows
                    append = rows.append
                    next_yield = log.start + len(rows) + chunk
        finally:
            self.dispatched = dispatched
            if collecting:
                gc.enable()
        yield i

    def _operations(self) -> tuple[Callable[[int, str], UserReading], Callable[[str], UserReading], Callable[[CostOf], Dispatch], Callable[[], float | None]]:
        """The scheduler's arrive, reading, dispatch and idle reset.

        With renormalisation on, they report v and meters in the absolute frame
        (value + the offset renormalisation has taken out) and renormalise every N picks.
        """
        sched = self.scheduler
        every = self.config.renormalise_every
        if not every or not isinstance(sched, SFQ):
            return sched.arrive, sched.reading, sched.dispatch, sched.idle_reset
        sfq = sched
        count = 0

        def absolute(reading: UserReading) -> UserReading:
            v, meter, deficit = reading
            off = sfq.offset
            return v + off, (None if meter is None else meter + off), deficit  # type: ignore[operator]

        def dispatch(cost_of: CostOf) -> Dispatch:
            nonlocal count
            req, user, cost, v, meter, deficit = sfq.dispatch(cost_of)
            off = sfq.offset
            count += 1
            if count % every == 0:
                sfq.renormalise()
            return req, user, cost, v + off, meter + off, deficit  # type: ignore[operator]

        return (
            lambda req, user: absolute(sfq.arrive(req, user)),
            lambda user: absolute(sfq.reading(user)),
            dispatch,
            lambda: sfq.idle_reset() + sfq.offset,
        )
