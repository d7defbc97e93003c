"""The replay's loop (semantics §2): at a timestamp, the completions, then every arrival, then each
pool dispatches in index order while it has a free slot and a waiting request, onto the plan's
servers (``servers.Servers``). A replicated replay's group routes each arrival to a pool, names
each event's replica and runs the share exchange (None: one pool).

Two bodies over the same plan and seam, chosen once per run: ``run_served`` for any servers (the
engine model, with its start rows and, under ``--slots auto``, the capacity's limit rows), and
``run_fixed``, the same loop for ``FixedService`` with its heap worked in place and rows without
the engine fields: on fixed service times ``run_served`` takes about 1.6 times its CPU time (a
call to the servers for each dispatch, completion and timestamp, and three more fields a row),
so the fixed-service replay keeps a body of its own (tests/core/test_replay_servers.py checks
that both give the same events). Both pack each event as one row into the log's buffer and hand
the rows over every ``chunk`` events, yielding (requests arrived, dispatches so far).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from heapq import heappop, heappush

from sfqtui.core.events import ARRIVE, COMPLETE, DISPATCH, IDLE_RESET, LIMIT, REASONS, START
from sfqtui.core.gcpause import CollectorPause
from sfqtui.core.replay.plan import ReplayPlan
from sfqtui.core.replay.servers import Change, FixedService, Servers

Progress = tuple[int, int]  # (requests arrived, dispatches so far), at each hand-over and at the end


def run_fixed(plan: ReplayPlan, servers: FixedService, chunk: int) -> Iterator[Progress]:
    """The loop on fixed service times: ``run_served`` with ``servers.send`` and ``servers.finish`` written in place."""
    window = plan.window
    services = window.services
    never = float("inf")
    nan = never - never
    group = plan.group
    enter = plan.feeder()
    ops = plan.operations
    scheds, arrive, reading, dispatch, idle_reset = plan.schedulers, ops.arrive, ops.reading, ops.dispatch, ops.idle_reset
    complete, observe, complete_charge = ops.complete, ops.observe, ops.complete_charge
    virtual, split, clocked = plan.traits.virtual_time, plan.split, plan.clocked
    pools = range(len(scheds))
    log = plan.log
    pack, pack_uncharged = log.layout.struct.pack, log.layout.uncharged.pack
    data = log.data
    every = chunk * log.layout.struct.size  # bytes of rows between two hand-overs
    running = servers.running
    free = list(plan.pool_slots)
    i = 0  # the next request to arrive, counted over the whole trace
    j = 0  # its row in the chunk being read
    dispatched = servers.sent
    yield_at = len(data) + every  # the size of the buffer at which to hand over
    pause = CollectorPause()
    pause.hold()  # see sfqtui.core.gcpause; let go whenever control returns to the caller
    try:
        arrivals, users, m, next_arrival = enter()
        size = window.size
        cost_of = plan.costs()
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
                        servers.sent = dispatched
                        data, yield_at = yield from _hand_over(plan, i, dispatched, servers.unfinished(), pause, every)
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
                if clocked and free[pool] and sched.backlogged:
                    sched.now = now  # only when it dispatches: a pool's clock is its own events', whatever the others do
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
                        servers.sent = dispatched
                        data, yield_at = yield from _hand_over(plan, i, dispatched, servers.unfinished(), pause, every)
        plan.retire_below(i)
    finally:
        servers.sent = dispatched
        pause.release()
    yield i, dispatched


def _hand_over(plan: ReplayPlan, arrived: int, dispatched: int, serving: Iterable[int], pause: CollectorPause,
               every: int) -> Generator[Progress, None, tuple[bytearray, int]]:
    """Hand the rows over: retire the chunks no request in the system is in, yield the progress
    so the caller can drain the log, and return the buffer to append to next with the size at
    which to hand over again (``every`` bytes on). The fixed-service loop checks for a hand-over
    after each dispatch and when a chunk enters, not at every time it visits (that cost it about
    3% of its instructions): between two checks it writes at most a chunk of arrivals and a
    completion per slot."""
    plan.retire_below(plan.oldest_in_system(arrived, serving))
    pause.release()
    yield arrived, dispatched
    pause.hold()
    data = plan.log.data
    return data, len(data) + every


def run_served(plan: ReplayPlan, servers: Servers, chunk: int) -> Iterator[Progress]:
    """The loop on any servers (the log's rows carry the upstream, limit and reason fields). At a
    timestamp: the servers' completions (freeing slots), every arrival, the pools' dispatches,
    then the requests the servers start; then a change of capacity due now, after which the
    pools dispatch again. A request dispatched at the very time a step ends can start in the next step."""
    never = float("inf")
    nan = never - never
    group = plan.group
    enter = plan.feeder()
    ops = plan.operations
    scheds, arrive, reading, dispatch, idle_reset = plan.schedulers, ops.arrive, ops.reading, ops.dispatch, ops.idle_reset
    complete, observe, complete_charge = ops.complete, ops.observe, ops.complete_charge
    virtual, split, clocked = plan.traits.virtual_time, plan.split, plan.clocked
    pools = range(len(scheds))
    log = plan.log
    pack, pack_uncharged = log.layout.struct.pack, log.layout.uncharged.pack
    every = chunk * log.layout.struct.size  # bytes of rows between two hand-overs
    capacity = servers.capacity
    free = list(plan.pool_slots) if capacity is None else [capacity.total]  # a capacity over time: one pool of its total
    send_to, finish, settle = servers.send, servers.finish, servers.settle
    lone = group is None and capacity is None  # one pool of fixed slots
    inflight = 0
    i = 0  # the next request to arrive, counted over the whole trace
    j = 0  # its row in the chunk being read
    dispatched = 0

    def limited(now: float, changes: list[Change]) -> None:
        """Limit rows for the upstreams whose limits changed."""
        rows = log.data  # the buffer the loop appends to
        for e, limit, reason in changes:
            rows += pack_uncharged(now, LIMIT, -1, nan, nan, nan, -1, -1, e, limit, REASONS.index(reason))

    data = log.data  # the buffer rows go to, until a hand-over drains it
    yield_at = len(data) + every
    pause = CollectorPause()
    pause.hold()  # see sfqtui.core.gcpause; let go whenever control returns to the caller
    try:
        arrivals, users, m, next_arrival = enter()
        cost_of = plan.costs()
        if capacity is not None and next_arrival != never:
            limited(next_arrival, capacity.first())
        while next_arrival != never or inflight:
            next_done = servers.next_done
            now = next_done if next_done <= next_arrival else next_arrival
            if capacity is not None and capacity.next_t < now:
                now = capacity.next_t  # a change due before anything else happens (most of an auto replay's timestamps)
            if group is not None and now >= group.due:
                group.exchange_until(now)

            if next_done == now:
                for req, user, pool, rep, _prompt, _output, _blocks, e in finish(now):
                    free[pool] += 1
                    inflight -= 1
                    if observe is not None:
                        observe[pool](req)
                    if complete is not None:
                        v, meter, deficit = complete[pool](req, user, complete_charge(req))  # type: ignore[misc]  # complete_charge is set whenever complete is
                    else:
                        v, meter, deficit = reading[pool](user)
                    data += pack_uncharged(now, COMPLETE, req, v, meter, deficit, rep, user, e, -1, -1)
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
                data += pack_uncharged(now, ARRIVE, i, v, meter, deficit, rep, user, -1, -1, -1)
                i += 1
                j += 1
                if j < m:
                    next_arrival = arrivals[j]
                else:
                    arrivals, users, m, next_arrival = enter()
                    j = 0
                if capacity is not None and capacity.next_t == never:
                    capacity.wake(now)
                if lone and not free[0] and next_arrival < next_done and len(data) < yield_at:
                    # Every slot is busy until the next completion (so nothing finished now either): nothing is
                    # dispatched or settles before then, and the next arrival is taken in this pass, as its own would.
                    now = next_arrival

            if group is not None and now == group.due:
                group.apply_due(now)

            moved = next_done == now  # the servers finished requests: they settle, even if nothing is dispatched
            rescaled = False
            while True:  # twice when a change of capacity due now lets more through
                for pool in pools:
                    sched = scheds[pool]
                    if clocked and free[pool] > 0 and sched.backlogged:
                        sched.now = now  # only when it dispatches: a pool's clock is its own events', whatever the others do
                    while free[pool] > 0 and sched.backlogged:
                        req, user, cost, v, meter, deficit, credit = dispatch[pool](cost_of[pool])
                        rep = pool if group is None else group.dispatched(pool, req, user, cost)
                        e = send_to(now, req, user, pool, rep)
                        data += pack(now, DISPATCH, req, cost, v, meter, deficit, credit, rep, user, e, -1, -1)
                        free[pool] -= 1
                        inflight += 1
                        dispatched += 1
                        moved = True
                        if virtual and not sched.backlogged:
                            data += pack_uncharged(now, IDLE_RESET, -1, idle_reset[pool](), nan, nan, pool if split else -1, -1, -1, -1, -1)
                if moved:
                    moved = False
                    for req, user, _pool, rep, _prompt, _output, _blocks, e in settle(now):
                        data += pack_uncharged(now, START, req, nan, nan, nan, rep, user, e, -1, -1)
                if capacity is None:
                    break
                if capacity.next_t == never:
                    capacity.stir(now)
                if rescaled or capacity.next_t != now:
                    break
                rescaled = True
                before = capacity.total
                limited(now, capacity.change(now, busy=inflight > 0 or any(sched.backlogged for sched in scheds)))
                if capacity.total == before:
                    break
                free[0] += capacity.total - before  # below the slots in use: none is preempted, dispatches wait

            if len(data) >= yield_at:
                data, yield_at = yield from _hand_over(plan, i, dispatched, servers.unfinished(), pause, every)
        plan.retire_below(i)
    finally:
        pause.release()
    yield i, dispatched
