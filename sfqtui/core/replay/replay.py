"""The replay engine of semantics §2: slots, same-time ordering, the dispatch loop.

A replay is a pure function of (trace, scheduler, slots, estimator, service model):
no clock, no randomness, no dict-order dependence.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from heapq import heappop, heappush

from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import ARRIVE, COMPLETE, DISPATCH, IDLE_RESET, EventColumns, EventLayout, EventLog
from sfqtui.core.gcpause import CollectorPause
from sfqtui.core.pricing.estimator import CostEstimator, EstimatorParams, Pricing
from sfqtui.core.pricing.service import TokenServiceModel, service_times
from sfqtui.core.replay.engine_loop import run_with_engines
from sfqtui.core.replay.loop_parts import LoopParts
from sfqtui.core.replicas.group import ReplicaGroup
from sfqtui.core.replicas.settings import ONE_REPLICA, ReplicaSettings
from sfqtui.core.requests.chunks import RequestChunk, RequestChunks, WholeTrace
from sfqtui.core.requests.trace import Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers import Scheduler, traits
from sfqtui.core.schedulers.base import CostOf, Dispatch, User, UserReading
from sfqtui.errors import InputError

CHUNK = 1 << 16
REPRICED = "repriced by the estimator"  # how a run of ReplayConfig.reprice over a trace's cost column is named on screen
Running = list[tuple[float, int, int, User, int, int]]  # the slots loop's heap: (done at, dispatch number, request, user, pool, replica)


@dataclass(frozen=True)
class ReplayConfig:
    scheduler: str = "sfq"
    slots: int = 1
    quantum: float | None = None
    estimator: EstimatorParams = field(default_factory=EstimatorParams)
    service: TokenServiceModel = field(default_factory=TokenServiceModel)
    renormalise_every: int | None = None
    replicas: ReplicaSettings = ONE_REPLICA
    reprice: bool = False  # price with the estimator even when the trace has a cost column (a what-if)
    engine: EngineSettings | None = None  # run the engine model behind the slots instead of fixed service times

    def __post_init__(self) -> None:
        found = traits(self.scheduler)
        if self.slots < 1:
            raise InputError("slots must be >= 1")
        self.replicas.check(self.slots, self.scheduler, found.virtual_time)
        if self.replicas.replicated and self.renormalise_every is not None:
            raise InputError("--renormalise-every renormalises one scheduler; it is not available with --replicas > 1")
        if self.quantum is not None and not self.quantum > 0:
            raise InputError("quantum must be > 0")
        if self.renormalise_every is not None and self.renormalise_every < 1:
            raise InputError("renormalise_every must be >= 1 dispatch")
        if self.engine is not None and self.engine.auto is not None and self.replicas.replicated and self.replicas.share.splits_slots:
            raise InputError("--slots auto makes one pool of the engines' limits: with --replicas it needs --share global")


class Replay:
    """Replays a trace under one scheduler, or under several replicas when the config says
    so (semantics §11), and fills an event log.

    The trace is a whole ``Trace`` or ``RequestChunks`` read a chunk at a time; either way
    the events are the same, and a request's data is reached through the replay's window,
    which holds only the chunks of requests still in the system.
    ``run()`` yields after roughly every ``chunk`` events so a caller can report progress
    or drain ``log``; ``chunks()`` does the draining and yields the events as columns.
    """

    def __init__(self, trace: Trace | RequestChunks, config: ReplayConfig) -> None:
        self.requests: RequestChunks = WholeTrace(trace) if isinstance(trace, Trace) else trace
        self.config = config
        self.traits = traits(config.scheduler)
        self.window = RequestWindow()
        columns = self.requests.columns
        self.estimator: CostEstimator | None = None
        self._complete_charge: CostOf | None = None
        if self.traits.charges == "actual":
            for column in ("input_tokens", "output_tokens"):
                if column not in columns:
                    raise InputError(f"{config.scheduler} charges actual usage and needs the trace column '{column}' "
                                     "(semantics §9); this trace has none")
            self.estimator = CostEstimator(config.estimator, self.window, columns)
            self._complete_charge = self.estimator.output_charge
            self.cost_source = "input at dispatch, output at completion"
        elif "cost" in columns and not config.estimator.oracle and not config.reprice:
            self.cost_source = "column"
        else:
            if "input_tokens" not in columns:
                raise InputError("pricing with the estimator (--reprice, an estimator option, or the oracle) needs the trace column "
                                 "'input_tokens'; this trace has only costs")
            self.estimator = CostEstimator(config.estimator, self.window, columns)
            self.cost_source = "oracle" if config.estimator.oracle else "estimator"
        self.service_source = "engine model" if config.engine is not None else "column" if "service_s" in columns else "model"
        self.quantum = config.quantum
        if self.traits.needs_quantum and self.quantum is None:
            self.quantum = self.largest_cost()
        replicas = config.replicas
        self.pool_slots = replicas.slots(config.slots) if replicas.replicated and replicas.share.splits_slots else [config.slots]
        weights = self.requests.weights_by_code()
        self.schedulers: list[Scheduler] = [self.traits.build(weights, self.quantum) for _ in self.pool_slots]
        self.scheduler = self.schedulers[0]
        self.estimators: list[CostEstimator | None] = [self.estimator] + [
            None if self.estimator is None else CostEstimator(config.estimator, self.window, columns) for _ in self.pool_slots[1:]
        ]
        if config.renormalise_every and self.traits.renormalisable:
            self._check_renormalisable()
        traits_ = self.traits
        layout = EventLayout.of(traits_.virtual_time, traits_.reading, "credit" in traits_.extra_columns, replicas.replicated,
                                engines=config.engine is not None)
        self.log = EventLog(layout)
        # Several replicas: the layer that routes, names replicas and exchanges charges (None: one scheduler).
        self.group = ReplicaGroup(replicas, self.requests.users, weights, self.schedulers, self.log) if replicas.replicated else None
        self.dispatched = 0

    def largest_cost(self) -> float:
        """c_max of the trace: the explicit costs, or the most the estimator can charge."""
        if not len(self.requests):
            return 1.0
        if self.cost_source == "column":
            return max(max(chunk.trace.cost) for chunk in self.requests.chunks())  # type: ignore[arg-type]  # cost_source "column": every chunk has one
        assert self.estimator is not None
        return max(self.estimator.largest_upper_bound(chunk.trace) for chunk in self.requests.chunks())

    def _check_renormalisable(self) -> None:
        """Renormalising is only decision-preserving when every sum is exact in both frames.

        Float sums of the same charges round differently once v is subtracted, so a tie in
        one frame can become an order in the other. Sums are exact when every charge is a
        multiple of one power-of-two grid and the total stays below 2^53 grid steps: then
        both frames compute the same numbers, shifted, and every decision is the same.
        """
        if self.cost_source != "column":
            raise InputError("--renormalise-every needs explicit costs: estimated costs are not exact in floating point, "
                             "so renormalising could change a decision (docs/semantics.md)")
        weights = self.requests.weights_by_code()
        largest_denominator, total = 1, 0.0
        for chunk in self.requests.chunks():
            costs = chunk.trace.cost
            assert costs is not None  # cost_source "column": every chunk has the cost column
            for user, cost in zip(chunk.trace.user, costs):
                charge = cost / weights.get(user, 1.0)
                denominator = charge.as_integer_ratio()[1]
                if denominator > largest_denominator:
                    largest_denominator = denominator
                total += charge
        if largest_denominator > 1 << 30 or total * largest_denominator >= 2.0**53:
            raise InputError("--renormalise-every needs charges (cost / weight) on one exact grid, such as whole numbers: "
                             "with these costs renormalising could change a decision (docs/semantics.md)")

    def take_requests(self) -> list[RequestChunk]:
        """The request chunks that the rows drained since the last call can mention, in order."""
        return self.window.held()

    def take_pricing(self) -> Pricing | None:
        """What priced the dispatches drained since the last call, over every pool's estimator (None: no estimator)."""
        if self.estimator is None:
            return None
        if len(self.estimators) == 1:
            return self.estimator.take_pricing()
        merged = Pricing({}, {})
        for estimator in self.estimators:
            assert estimator is not None  # every pool has one when the first has
            taken = estimator.take_pricing()
            merged.ratio.update(taken.ratio)
            merged.est_output.update(taken.est_output)
        return merged

    def run_all(self) -> EventColumns:
        """Replay to the end and return every event as columns (small traces and tests)."""
        for _ in self.run():
            pass
        return self._priced(self.log.held().columns())

    def chunks(self, chunk: int = CHUNK) -> Iterator[tuple[EventColumns, int]]:
        """Replay to the end, handing over the events every ``chunk`` events as columns,
        with the number of requests arrived so far; nothing is kept after it is handed over."""
        for arrived in self.run(chunk):
            rows = self.log.drain()
            self.take_requests()  # columns name requests by index: they need no request chunk
            if len(rows):
                yield self._priced(rows.columns()), arrived

    def _priced(self, columns: EventColumns) -> EventColumns:
        """The columns with the ratio and estimated output that priced each dispatch, when an estimator did."""
        pricing = self.take_pricing()
        if pricing is None:
            return columns
        ratio = [pricing.ratio.get(req) if kind == DISPATCH else None for kind, req in zip(columns.kind, columns.req)]
        est_output = [pricing.est_output.get(req) if kind == DISPATCH else None for kind, req in zip(columns.kind, columns.req)]
        return replace(columns, ratio=ratio, est_output=est_output)

    def _cost_function(self, estimator: CostEstimator | None) -> CostOf:
        """What a dispatch priced by ``estimator`` (None: the cost column) charges, by request
        index (the window must hold its first chunk)."""
        if estimator is None:
            if isinstance(self.requests, WholeTrace):  # one chunk, held whole: its own column, with no Python call to go through
                assert self.requests.trace.cost is not None  # cost_source "column"
                return self.requests.trace.cost.__getitem__
            return self.window.cost_column()
        return estimator.input_charge if self._complete_charge is not None else estimator.cost

    def run(self, chunk: int = CHUNK) -> Iterator[int]:
        """Replay to the end, yielding the number of requests arrived every ``chunk`` events:
        on fixed service times, or on the engine model when the config has one (its own loop)."""
        if self.config.engine is not None:
            return run_with_engines(self, self.config.engine, chunk)
        return self._run_slots(chunk)

    def _run_slots(self, chunk: int) -> Iterator[int]:
        """Replay on fixed service times (semantics §2).

        One loop for one scheduler and for several replicas: each pool (a scheduler and its
        slots) dispatches in index order; a replicated replay's group routes arrivals to a
        pool, names each event's replica and runs the share exchange (None: one pool).
        """
        window = self.window
        services = window.services
        service_model = self.config.service
        never = float("inf")
        nan = never - never
        group = self.group
        enter = self.feeder(lambda trace: service_times(trace, service_model))
        scheds, arrive, reading, dispatch, idle_reset, complete, observe, complete_charge, virtual, split = self.loop_parts()
        pools = range(len(scheds))
        log = self.log
        pack, pack_uncharged = log.layout.struct.pack, log.layout.uncharged.pack
        data = log.data
        every = chunk * log.layout.struct.size  # bytes of rows between two hand-overs
        running: Running = []
        free = list(self.pool_slots)
        i = 0  # the next request to arrive, counted over the whole trace
        j = 0  # its row in the chunk being read
        dispatched = self.dispatched
        yield_at = len(data) + every  # the size of the buffer at which to hand over
        pause = CollectorPause()
        pause.hold()  # see sfqtui.core.gcpause; let go whenever control returns to the caller
        try:
            arrivals, users, m, next_arrival = enter()
            size = window.size
            cost_of = [self._cost_function(e) for e in self.estimators]
            next_done = never
            pool = rep = 0  # one scheduler: they stay 0 (a group names them for each event)
            idle = sum(free)  # slots free in every pool together
            while next_arrival != never or running:
                now = next_done if next_done <= next_arrival else next_arrival
                if group is not None and now >= group.due:
                    group.exchange_until(now)

                while next_done == now:
                    _, _, req, user, pool, rep = heappop(running)
                    next_done = running[0][0] if running else never
                    free[pool] += 1
                    idle += 1
                    if observe is not None:
                        observe[pool](req)
                    if complete is not None:
                        v, meter, deficit = complete[pool](req, user, complete_charge(req))  # type: ignore[misc]  # complete_charge is set whenever complete is
                    else:
                        v, meter, deficit = reading[pool](user)
                    data += pack_uncharged(now, COMPLETE, req, v, meter, deficit, rep, user)
                    if group is not None:
                        group.completed(rep)

                while next_arrival == now:
                    user = users[j]
                    if group is not None:
                        rep = group.arrive(i, j, user)
                        pool = rep if split else 0
                    v, meter, deficit = arrive[pool](i, user)
                    data += pack_uncharged(now, ARRIVE, i, v, meter, deficit, rep, user)
                    i += 1
                    j += 1
                    if j < m:
                        next_arrival = arrivals[j]
                    else:
                        arrivals, users, m, next_arrival = enter()
                        j = 0
                        if len(data) >= yield_at:
                            data, yield_at = yield from self._hand_over(i, dispatched, running, pause, every)
                    if not idle and next_arrival < next_done and (group is None or next_arrival < group.due):
                        # Every slot is busy until the next completion, so nothing is dispatched
                        # before then: the next arrival is taken in this pass, as its own would.
                        now = next_arrival

                if group is not None and now == group.due:
                    group.apply_due(now)

                if not idle:
                    continue  # no slot to dispatch to
                for pool in pools:
                    sched = scheds[pool]
                    while free[pool] and sched.backlogged:
                        req, user, cost, v, meter, deficit, credit = dispatch[pool](cost_of[pool])
                        if group is not None:
                            rep = group.dispatched(pool, req, user, cost)
                        data += pack(now, DISPATCH, req, cost, v, meter, deficit, credit, rep, user)
                        free[pool] -= 1
                        idle -= 1
                        k = req // size
                        heappush(running, (now + services[k][req % size], dispatched, req, user, pool, rep))  # type: ignore[index]  # chunk k holds a request just dispatched: not retired
                        next_done = running[0][0]
                        dispatched += 1
                        if virtual and not sched.backlogged:
                            data += pack_uncharged(now, IDLE_RESET, -1, idle_reset[pool](), nan, nan, pool if split else -1, -1)
                        if len(data) >= yield_at:
                            data, yield_at = yield from self._hand_over(i, dispatched, running, pause, every)
            window.retire_below(i)
        finally:
            self.dispatched = dispatched
            pause.release()
        yield i

    def _hand_over(self, arrived: int, dispatched: int, running: Running, pause: CollectorPause,
                   every: int) -> Generator[int, None, tuple[bytearray, int]]:
        """Hand the rows over: retire the chunks no request in the system is in, yield the
        number of requests arrived so the caller can drain the log, and return the buffer to
        append to next with the size at which to hand over again (``every`` bytes on). The loop checks for a hand-over after each dispatch and when a chunk
        enters, not at every time it visits (that cost it about 3% of its instructions):
        between two checks it writes at most a chunk of arrivals and a completion per slot."""
        self.window.retire_below(self.oldest_in_system(arrived, (entry[2] for entry in running)))
        self.dispatched = dispatched
        pause.release()
        yield arrived
        pause.hold()
        data = self.log.data
        return data, len(data) + every

    def oldest_in_system(self, arrived: int, running: Iterable[int]) -> int:
        """The oldest request not yet completed: yet to arrive (``arrived``), queued in a pool's scheduler, or ``running``."""
        queued = [oldest for sched in self.schedulers if (oldest := sched.oldest_queued()) is not None]
        return min([arrived, *queued, *running])

    def feeder(self, services_of: Callable[[Trace], Sequence[float]]) -> Callable[[], tuple[Sequence[float], Sequence[User], int, float]]:
        """What a loop calls to bring the next chunk into the window (with ``services_of`` its
        requests' service times): its arrivals, users, length and first arrival (none left:
        empty, and an infinite first arrival)."""
        incoming = iter(self.requests.chunks())
        window, group = self.window, self.group

        def enter() -> tuple[Sequence[float], Sequence[User], int, float]:
            entering = next(incoming, None)
            if entering is None:
                return (), (), 0, float("inf")
            trace = entering.trace
            window.add(entering, services_of(trace))
            if group is not None:
                group.enter(trace, entering.start)
            return trace.arrival_s, trace.user, len(trace), trace.arrival_s[0]

        return enter

    def loop_parts(self) -> LoopParts:
        """What a loop binds as locals once per run (``LoopParts``)."""
        complete, observe = self._completion_hooks()
        return LoopParts(self.schedulers, *self._operations(), complete, observe, self._complete_charge, self.traits.virtual_time,
                         self.group is None or self.group.split)

    def _completion_hooks(self) -> tuple[list[Callable[[int, User, float], UserReading]] | None, list[Callable[[int], None]] | None]:
        """What a completion calls besides the log: each pool's scheduler's complete, when it charges actual
        usage (None: it does not), and each pool's estimator's observe, when costs are estimated (None: given)."""
        complete: list[Callable[[int, User, float], UserReading]] | None = None
        if self._complete_charge is not None:
            complete = [sched.complete for sched in self.schedulers]
        observe: list[Callable[[int], None]] | None = None
        if self.estimator is not None:
            observe = [e.observe for e in self.estimators if e is not None]
        return complete, observe

    def _operations(self) -> tuple[list[Callable[[int, User], UserReading]], list[Callable[[User], UserReading]],
                                   list[Callable[[CostOf], Dispatch]], list[Callable[[], float | None]]]:
        """Each pool's scheduler's arrive, reading, dispatch and idle reset.

        With renormalisation on (one scheduler only), they report v and meters in the
        absolute frame (value + the offset renormalisation has taken out) and renormalise
        every N picks.
        """
        scheds = self.schedulers
        every = self.config.renormalise_every
        if not every or not self.traits.renormalisable:
            return [s.arrive for s in scheds], [s.reading for s in scheds], [s.dispatch for s in scheds], [s.idle_reset for s in scheds]
        sched = self.scheduler
        count = 0

        def absolute(reading: UserReading) -> UserReading:
            v, meter, deficit = reading
            off = sched.offset
            return v + off, (None if meter is None else meter + off), deficit  # type: ignore[operator]  # a renormalisable scheduler always has v

        def dispatch(cost_of: CostOf) -> Dispatch:
            nonlocal count
            req, user, cost, v, meter, deficit, credit = sched.dispatch(cost_of)
            off = sched.offset
            count += 1
            if count % every == 0:
                sched.renormalise()
            return req, user, cost, v + off, meter + off, deficit, credit  # type: ignore[operator]  # a renormalisable scheduler reports v and the meter

        return (
            [lambda req, user: absolute(sched.arrive(req, user))],
            [lambda user: absolute(sched.reading(user))],
            [dispatch],
            [lambda: sched.idle_reset() + sched.offset],  # type: ignore[operator]  # a renormalisable scheduler's idle reset returns v
        )


def one_scheduler(config: ReplayConfig) -> ReplayConfig:
    """The same replay with one scheduler over all the slots: the reference of §11's measures."""
    return replace(config, replicas=ONE_REPLICA)
