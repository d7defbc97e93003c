"""The replay's loop when it runs the engine model (docs/semantics.md, "The engine model in a
replay"): the balancer's slots bound what is dispatched and not complete, as in the loop of
``replay.py``, but a dispatched request goes to an engine's queue and completes when that
engine has run it (``engines.py``), not after a fixed service time.

At a timestamp: the engines' steps that end there (engine order: their finished requests
complete, freeing slots), then every arrival, then the pools dispatch (each request to the
engine with the fewest in flight), then every engine between steps lets its queue's heads
into its batch (``start`` rows, engine order, then queue order) and starts its next step.
A request dispatched at the very time a step ends can start in the next step.

Kept apart from ``replay.py``'s loop, chosen once per run, so a replay without the engine
model runs exactly the code it ran before; both take their chunks (``Replay.feeder``) and
their scheduler operations and hooks (``Replay.loop_parts``) from the replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from sfqtui.core.engines.limits import EngineLimits
from sfqtui.core.engines.pool import EnginePool, request_tokens
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import ARRIVE, COMPLETE, DISPATCH, IDLE_RESET, LIMIT, REASONS, START, EventLog
from sfqtui.core.gcpause import CollectorPause
from sfqtui.core.pricing.estimator import CostEstimator
from sfqtui.core.replay.loop_parts import LoopParts
from sfqtui.core.replicas.group import ReplicaGroup
from sfqtui.core.requests.trace import Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers.base import CostOf, Scheduler, User


class EngineReplaying(Protocol):
    """What the loop reads of the Replay it runs for (``replay.Replay``)."""

    window: RequestWindow
    schedulers: list[Scheduler]
    estimators: list[CostEstimator | None]
    log: EventLog
    group: ReplicaGroup | None
    pool_slots: list[int]
    dispatched: int

    def _cost_function(self, estimator: CostEstimator | None) -> CostOf: ...

    def oldest_in_system(self, arrived: int, running: Iterable[int]) -> int: ...

    def feeder(self, services_of: Callable[[Trace], Sequence[float]]) -> Callable[[], tuple[Sequence[float], Sequence[User], int, float]]: ...

    def loop_parts(self) -> LoopParts: ...


def run_with_engines(replay: EngineReplaying, settings: EngineSettings, chunk: int) -> Iterator[int]:
    """Replay to the end on the engine model, yielding the number of requests arrived every
    ``chunk`` events (``Replay.run``'s contract)."""
    window = replay.window
    model = settings.model
    engines = EnginePool(settings)
    never = float("inf")
    nan = never - never
    group = replay.group
    tokens: list[tuple[Sequence[int], Sequence[int]] | None] = []  # by chunk: each request's prompt and output tokens (None: retired)

    def no_services(trace: Trace) -> Sequence[float]:
        """The engines time each request; the window keeps the chunk's prompt and output tokens here instead."""
        tokens.append(request_tokens(trace, model))
        return ()

    enter = replay.feeder(no_services)
    scheds, arrive, reading, dispatch, idle_reset, complete, observe, complete_charge, virtual, split = replay.loop_parts()
    pools = range(len(scheds))
    log = replay.log
    pack, pack_uncharged = log.layout.struct.pack, log.layout.uncharged.pack
    row_size = log.layout.struct.size
    limits = EngineLimits(settings.auto, engines) if settings.auto is not None else None
    free = list(replay.pool_slots) if limits is None else [limits.total]  # auto: one pool, the limits' sum
    inflight = 0
    i = 0  # the next request to arrive, counted over the whole trace
    j = 0  # its row in the chunk being read
    dispatched = replay.dispatched

    def send(now: float) -> None:
        """Each pool dispatches while it has a free slot and a waiting request; then the engines between steps start theirs."""
        nonlocal inflight, dispatched
        put = log.data.extend
        for pool in pools:
            sched = scheds[pool]
            while free[pool] > 0 and sched.backlogged:
                req, user, cost, v, meter, deficit, credit = dispatch[pool](cost_of[pool])
                rep = pool if group is None else group.dispatched(pool, req, user, cost)
                prompts, outputs = tokens[req // size]  # type: ignore[misc]  # the chunk of a request just dispatched is not retired
                r = req % size
                e = engines.send(now, (req, user, pool, rep, prompts[r], outputs[r]))
                put(pack(now, DISPATCH, req, cost, v, meter, deficit, credit, rep, user, e, -1, -1))
                free[pool] -= 1
                inflight += 1
                dispatched += 1
                if virtual and not sched.backlogged:
                    put(pack_uncharged(now, IDLE_RESET, -1, idle_reset[pool](), nan, nan, pool if split else -1, -1, -1, -1, -1))
        for e, (req, user, _pool, rep, _prompt, _output) in engines.settle(now):
            put(pack_uncharged(now, START, req, nan, nan, nan, rep, user, e, -1, -1))

    def retire_below(oldest: int) -> None:
        """The window retires the chunks below the oldest request in the system, and their tokens go with them."""
        for k in window.retire_below(oldest):
            tokens[k] = None

    def limited(now: float, changes: list[tuple[int, int, str]]) -> None:
        """Limit rows for the engines whose limits changed."""
        for e, limit, reason in changes:
            log.data.extend(pack_uncharged(now, LIMIT, -1, nan, nan, nan, -1, -1, e, limit, REASONS.index(reason)))

    yield_at = len(log.data) + chunk * row_size
    pause = CollectorPause()
    pause.hold()  # see sfqtui.core.gcpause; let go whenever control returns to the caller
    try:
        arrivals, users, m, next_arrival = enter()
        size = window.size
        cost_of = [replay._cost_function(e) for e in replay.estimators]
        if limits is not None and next_arrival != never:
            limited(next_arrival, limits.first())
        while next_arrival != never or inflight:
            next_done = engines.next_t
            now = next_done if next_done <= next_arrival else next_arrival
            if limits is not None and limits.next_t < now:
                now = limits.next_t
            if group is not None and now >= group.due:
                group.exchange_until(now)
            put = log.data.extend

            if next_done == now:
                for e, (req, user, pool, rep, _prompt, _output) in engines.finish(now):
                    free[pool] += 1
                    inflight -= 1
                    if observe is not None:
                        observe[pool](req)
                    if complete is not None:
                        v, meter, deficit = complete[pool](req, user, complete_charge(req))  # type: ignore[misc]  # complete_charge is set whenever complete is
                    else:
                        v, meter, deficit = reading[pool](user)
                    put(pack_uncharged(now, COMPLETE, req, v, meter, deficit, rep, user, e, -1, -1))
                    if group is not None:
                        group.completed(rep)

            while next_arrival == now:
                user = users[j]
                if group is None:
                    pool = rep = 0
                else:
                    rep = group.arrive(i, j, user)
                    pool = rep if split else 0
                v, meter, deficit = arrive[pool](i, user)
                put(pack_uncharged(now, ARRIVE, i, v, meter, deficit, rep, user, -1, -1, -1))
                i += 1
                j += 1
                if j < m:
                    next_arrival = arrivals[j]
                else:
                    arrivals, users, m, next_arrival = enter()
                    j = 0
                if limits is not None and limits.next_t == never:
                    limits.wake(now)

            if group is not None and now == group.due:
                group.apply_due(now)

            send(now)
            if limits is not None and limits.next_t == now:
                before = limits.total
                limited(now, limits.scrape(now, busy=inflight > 0 or any(sched.backlogged for sched in scheds)))
                if limits.total != before:
                    free[0] += limits.total - before
                    send(now)

            if len(log.data) >= yield_at:
                retire_below(replay.oldest_in_system(i, engines.unfinished()))
                replay.dispatched = dispatched
                pause.release()
                yield i
                pause.hold()
                yield_at = len(log.data) + chunk * row_size
        retire_below(i)
    finally:
        replay.dispatched = dispatched
        pause.release()
    yield i
