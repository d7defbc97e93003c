"""Several balancer replicas behind a router (semantics §11).

Each request is routed at its arrival and stays on its replica. Under share ``none`` and
``sync`` every replica has its own scheduler, estimator and slots (a pool each); under
``global`` there is one scheduler, one estimator and one pool of all the slots, and the
replica only names where the request was held. At a timestamp: every completion, every
arrival (routed in arrival order), the sync publications due, then each pool dispatches
in index order while it has a free slot and a waiting request.

So under ``none`` each replica's events are exactly a one-scheduler replay of the
requests routed to it, and under ``global`` the events are exactly those of one
scheduler over the whole trace; the tests check both against `Replay`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from heapq import heappop, heappush
from typing import cast

from sfqtui.core.engine.chunks import RequestChunks
from sfqtui.core.engine.estimator import CostEstimator, Pricing
from sfqtui.core.engine.events import ARRIVE, COMPLETE, DISPATCH, IDLE_RESET, SYNC, EventBuffer, ReplicaEventRow
from sfqtui.core.engine.gcpause import CollectorPause
from sfqtui.core.engine.replay import CHUNK, Replay, ReplayConfig
from sfqtui.core.engine.replication import ONE_REPLICA
from sfqtui.core.engine.routers import LeastLoadedRouter, StaticRouter, router_for
from sfqtui.core.engine.service import service_times
from sfqtui.core.engine.sync import Exchange, Publication
from sfqtui.core.engine.trace import Trace
from sfqtui.core.schedulers import Scheduler
from sfqtui.core.schedulers.base import User
from sfqtui.core.schedulers.sfq import SFQ


class ReplicatedReplay(Replay):
    """A replay of ``config.replicas.count`` > 1 replicas; rows are ReplicaEventRows."""

    def __init__(self, trace: Trace | RequestChunks, config: ReplayConfig) -> None:
        super().__init__(trace, config)
        settings = self.settings = config.replicas
        self.router = router_for(settings, self.requests.users)
        share = settings.share
        self.split = share.splits_slots
        self.pool_slots = settings.slots(config.slots) if self.split else [config.slots]
        pools = len(self.pool_slots)
        weights = self.requests.weights_by_code()
        self.schedulers: list[Scheduler] = [self.scheduler] + [self.traits.build(weights, self.quantum) for _ in range(pools - 1)]
        self.estimators: list[CostEstimator | None] = [self.estimator] + [
            None if self.estimator is None else CostEstimator(config.estimator, self.window, self.requests.columns)
            for _ in range(pools - 1)
        ]
        self.exchange: Exchange | None = None
        self._meters = [sched.meters for sched in self.schedulers if isinstance(sched, SFQ)]  # what sync publishes
        if share.mode == "sync":
            assert share.every_s is not None  # Share requires a period for sync
            self.exchange = Exchange(settings.count, share.every_s, share.delay_s)
        self.log = EventBuffer(replicated=True)

    def take_pricing(self) -> Pricing | None:
        """What priced the dispatches drained since the last call, over every replica's estimator."""
        if self.estimator is None:
            return None
        merged = Pricing({}, {})
        for estimator in self.estimators:
            assert estimator is not None
            taken = estimator.take_pricing()
            merged.ratio.update(taken.ratio)
            merged.est_output.update(taken.est_output)
        return merged

    def run(self, chunk: int = CHUNK) -> Iterator[int]:
        """Replay to the end, yielding the number of requests arrived every ``chunk`` events."""
        window = self.window
        services, left = window.services, window.left
        service_model = self.config.service
        incoming = iter(self.requests.chunks())
        never = float("inf")
        router = self.router
        static = router if isinstance(router, StaticRouter) else None
        pick = router.pick if isinstance(router, LeastLoadedRouter) else None

        def enter() -> tuple[Sequence[float], Sequence[int], Sequence[int], int, float]:
            """Bring the next chunk into the window: its arrivals, users, replicas (static routers), length and first arrival."""
            entering = next(incoming, None)
            if entering is None:
                return (), (), (), 0, never
            trace = entering.trace
            window.add(entering, service_times(trace, service_model))
            routes = static.assign(trace, entering.start) if static is not None else ()
            return trace.arrival_s, trace.user, routes, len(trace), trace.arrival_s[0]

        split = self.split
        scheds = self.schedulers
        arrive = [s.arrive for s in scheds]
        reading = [s.reading for s in scheds]
        dispatch = [s.dispatch for s in scheds]
        idle_reset = [s.idle_reset for s in scheds]
        complete = [s.complete for s in scheds] if self._complete_charge is not None else None
        complete_charge = self._complete_charge
        observe = [e.observe for e in self.estimators if e is not None] if self.estimator is not None else None
        virtual = self.traits.virtual_time
        exchange = self.exchange
        weights = self.requests.weights_by_code()
        load = [0] * self.settings.count if pick is not None else None
        held: dict[int, int] = {}  # global: each queued request's replica
        log = self.log
        rows = log.rows
        append = cast(Callable[[ReplicaEventRow], None], rows.append)  # the buffer is replicated: its rows are ReplicaEventRows
        running: list[tuple[float, int, int, User, int, int]] = []  # (done at, dispatch number, request, user, its chunk, replica)
        free = list(self.pool_slots)
        i = j = 0  # the next request to arrive, over the whole trace and in its chunk
        dispatched = self.dispatched
        next_yield = log.start + len(rows) + chunk
        pause = CollectorPause()
        pause.hold()  # see sfqtui.core.engine.gcpause; let go whenever control returns to the caller
        try:
            arrivals, users, routes, m, next_arrival = enter()
            size = window.size
            cost_of = [self._cost_function(e) for e in self.estimators]
            next_done = never
            while next_arrival != never or running:
                now = next_done if next_done <= next_arrival else next_arrival
                if exchange is not None and now >= exchange.due:
                    self._exchange_until(now)
                touched = 0  # a bit per pool that may now dispatch

                while next_done == now:
                    _, _, req, user, k, rep = heappop(running)
                    next_done = running[0][0] if running else never
                    pool = rep if split else 0
                    free[pool] += 1
                    touched |= 1 << pool
                    if load is not None:
                        load[rep] -= 1
                    if observe is not None:
                        observe[pool](req)
                    if complete is not None:
                        v, meter, deficit = complete[pool](req, user, complete_charge(req))  # type: ignore[misc]  # set with complete
                    else:
                        v, meter, deficit = reading[pool](user)
                    append((now, COMPLETE, req, None, v, meter, deficit, None, rep, user))
                    left[k] -= 1
                    if not left[k]:
                        window.retire(k)

                while next_arrival == now:
                    user = users[j]
                    rep = routes[j] if pick is None else pick(load)  # type: ignore[arg-type]  # load is kept when pick is
                    if load is not None:
                        load[rep] += 1
                    if split:
                        pool = rep
                    else:
                        pool = 0
                        held[i] = rep
                    touched |= 1 << pool
                    if exchange is not None:
                        exchange.touched.add(user)
                    v, meter, deficit = arrive[pool](i, user)
                    append((now, ARRIVE, i, None, v, meter, deficit, None, rep, user))
                    i += 1
                    j += 1
                    if j < m:
                        next_arrival = arrivals[j]
                    else:
                        arrivals, users, routes, m, next_arrival = enter()
                        j = 0

                if exchange is not None and exchange.pending is not None and exchange.pending.apply_at == now:
                    self._apply(exchange.take())

                while touched:
                    low = touched & -touched
                    touched ^= low
                    pool = low.bit_length() - 1
                    sched = scheds[pool]
                    while free[pool] and sched.backlogged:
                        req, user, cost, v, meter, deficit, credit = dispatch[pool](cost_of[pool])
                        rep = pool if split else held.pop(req)
                        append((now, DISPATCH, req, cost, v, meter, deficit, credit, rep, user))
                        if exchange is not None:
                            exchange.charge(rep, user, cost / weights[user] if user in weights else cost)
                        free[pool] -= 1
                        k = req // size
                        heappush(running, (now + services[k][req % size], dispatched, req, user, k, rep))  # type: ignore[index]  # its chunk is held
                        dispatched += 1
                        if virtual and not sched.backlogged:
                            append((now, IDLE_RESET, -1, None, idle_reset[pool](), None, None, None, pool if split else -1, -1))
                next_done = running[0][0] if running else never

                if log.start + len(rows) >= next_yield:
                    self.dispatched = dispatched
                    pause.release()
                    yield i
                    pause.hold()
                    rows = log.rows
                    append = cast(Callable[[ReplicaEventRow], None], rows.append)
                    next_yield = log.start + len(rows) + chunk
        finally:
            self.dispatched = dispatched
            pause.release()
        yield i

    def _exchange_until(self, now: float) -> None:
        """The sync exchanges due before anything happens at ``now``, in time order: an
        application due before now (at its own time), a publication due at or before now."""
        exchange = self.exchange
        assert exchange is not None
        while True:
            pending = exchange.pending
            if pending is not None and pending.apply_at < now:
                self._apply(exchange.take())
            elif exchange.publish_at <= now:
                exchange.publish(self._meters, now)
            else:
                return

    def _apply(self, publication: Publication) -> None:
        """Every replica raises its meters to the published ones plus what it charged since (sync rows, at their time)."""
        exchange = self.exchange
        assert exchange is not None
        append = cast(Callable[[ReplicaEventRow], None], self.log.rows.append)  # the buffer is replicated
        t = publication.apply_at
        for rep, sched in enumerate(self.schedulers):
            assert isinstance(sched, SFQ)  # ReplicaSettings.check: sync needs meters and v
            since = exchange.charges[rep]
            targets = [(user, meter + since[user] if user in since else meter) for user, meter in publication.meters.items()]
            for user, meter in sched.raise_meters(targets):
                exchange.touched.add(user)
                append((t, SYNC, -1, None, sched.v, meter, None, None, rep, user))


def replay_of(trace: Trace | RequestChunks, config: ReplayConfig) -> Replay:
    """The replay ``config`` asks for: one scheduler, or several replicas."""
    if config.replicas.replicated:
        return ReplicatedReplay(trace, config)
    return Replay(trace, config)


def one_scheduler(config: ReplayConfig) -> ReplayConfig:
    """The same replay with one scheduler over all the slots: the reference of §11's measures."""
    return replace(config, replicas=ONE_REPLICA)
