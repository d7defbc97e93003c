"""Per-user FIFO queues in front of a fixed number of slots; the core's SFQ picks whenever one is free.

Every change is published as a semantics §7 event (t in seconds since the proxy
started), with the extras our logs carry: ``weight`` on every row that names a user,
``ratio`` and ``est_output`` on dispatches (what priced the request), with a placer the
upstream each dispatch was placed on (and, with ``--placement prefix``, the prompt tokens the
proxy's index predicted it held), and ``output_tokens`` on completions when the upstream
reported usage (``cached_tokens`` too, when it said what its prefix cache held). A request is
priced when it is dispatched and the charge is never refunded, whatever happens to it
afterwards (semantics §2, article §5.1); a request cancelled while queued is never
charged.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from enum import Enum
from typing import NotRequired, TypedDict, Unpack

from sfqtui.core.pricing.estimator import CostEstimator
from sfqtui.core.schedulers import make_scheduler
from sfqtui.errors import InputError
from sfqtui.protocol import SCHEDULER, Event, SchedulerState
from sfqtui.proxy.attributes import NO_POLICY, LiveAttributes, RequestPolicy
from sfqtui.proxy.errors import Closing


class Stage(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"


class Ticket:
    """One request's place in the scheduler; ``settled`` resolves when it leaves the queue
    (dispatched: stage RUNNING; or cancelled by shutdown: stage CANCELLED)."""

    __slots__ = ("req", "request_id", "user", "input_tokens", "max_tokens", "scope_key", "arrived_t",
                 "dispatched_t", "finished_t", "stage", "settled", "cost", "ratio", "est_output", "blocks", "placed")

    def __init__(self, req: int, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable, t: float) -> None:
        self.req = req
        self.request_id = f"r{req}"
        self.user = user
        self.input_tokens = input_tokens
        self.max_tokens = max_tokens
        self.scope_key = scope_key
        self.arrived_t = t
        self.dispatched_t: float | None = None
        self.finished_t: float | None = None
        self.stage = Stage.QUEUED
        self.cost: float | None = None
        self.ratio: float | None = None
        self.est_output: float | None = None
        self.blocks: Sequence[int] = ()  # the prompt's chained block hashes, when the proxy names them
        self.placed: Placed | None = None  # where the placer put it at dispatch (a lone proxy)
        self.settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class EventExtras(TypedDict):
    """What a kind of event carries besides the §7 columns the dispatcher always fills."""

    cost: NotRequired[float | None]
    ratio: NotRequired[float | None]
    est_output: NotRequired[float | None]
    output_tokens: NotRequired[int | None]
    cached_tokens: NotRequired[int]
    upstream: NotRequired[str]
    predicted_cached_tokens: NotRequired[int]


class Placed:
    """Where a dispatched request was placed: its upstream (by index), holding a place there
    until the request is sent (``taken``) or ends unsent; with ``--placement prefix``, the
    blocks of its prompt the proxy's index said that upstream held."""

    __slots__ = ("index", "held", "taken")

    def __init__(self, index: int, held: int | None) -> None:
        self.index = index
        self.held = held
        self.taken = False


# A dispatch's placement: picks the upstream of the ticket (setting its ``placed``) and says
# what the dispatch event carries of it.
Placer = Callable[[Ticket], EventExtras]
# Each event goes to every sink with the ticket it is about (None for idle_reset).
Sink = Callable[[Event, "Ticket | None"], None]


class Dispatcher:
    def __init__(self, slots: int, weights: dict[str, float], estimator: CostEstimator, sinks: Iterable[Sink],
                 scheduler: str = SCHEDULER, placer: Placer | None = None) -> None:
        if slots < 1:
            raise InputError("--slots must be >= 1")
        self.slots = slots
        self.inflight = 0
        self.v = 0.0
        self.closing = False
        self.estimator = estimator
        self.scheduler = scheduler
        self._attributes = LiveAttributes()  # what a policy of semantics §15 reads of each queued request
        self._sched = make_scheduler(scheduler, weights, attributes=self._attributes)
        self._sinks = list(sinks)
        self._placer = placer
        self._queued: dict[int, Ticket] = {}
        self._next_req = 0
        self._started = time.monotonic()
        self._queued_by_user: Counter[str] = Counter()
        self._inflight_by_user: Counter[str] = Counter()
        self._users: set[str] = set()

    def now(self) -> float:
        return time.monotonic() - self._started

    def weight(self, user: str) -> float:
        return self._sched.weight(user)

    def meter(self, user: str) -> float | None:
        return _number(self._sched.meter(user))

    def users(self) -> list[str]:
        """Every user that has sent a request, in id order."""
        return sorted(self._users)

    def queued(self, user: str) -> int:
        return self._queued_by_user[user]

    def running(self, user: str) -> int:
        return self._inflight_by_user[user]

    def _emit(self, kind: str, ticket: Ticket | None, v: float | None, meter: float | None, at: float | None = None,
              **extras: Unpack[EventExtras]) -> None:
        if v is not None:
            self.v = v
        event: Event = {"seq": None, "t": self.now() if at is None else at, "kind": kind, "scheduler": self.scheduler,
                        "request_id": None, "user": None, "cost": None, "v": v, "meter": _number(meter), "deficit": None}
        if ticket is not None:
            event["request_id"] = ticket.request_id
            event["user"] = ticket.user
            event["weight"] = self.weight(ticket.user)
        event.update(extras)
        for sink in self._sinks:
            sink(event, ticket)

    def arrive(self, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable, policy: RequestPolicy = NO_POLICY,
               blocks: Sequence[int] = ()) -> Ticket:
        """Queue a request behind its user's earlier ones and dispatch whatever the free slots allow
        (``policy``: what it says of itself, which a scheduler other than SFQ may read; ``blocks``:
        its prompt's, which the placer reads)."""
        if self.closing:
            raise Closing()
        ticket = Ticket(self._next_req, user, input_tokens, max_tokens, scope_key, self.now())
        ticket.blocks = blocks
        self._next_req += 1
        self._queued[ticket.req] = ticket
        self._queued_by_user[user] += 1
        self._users.add(user)
        self._attributes.add(ticket.req, policy, ticket.arrived_t, input_tokens)
        v, meter, _ = self._sched.arrive(ticket.req, user)
        self._emit("arrive", ticket, v, meter)
        self._dispatch_while_free()
        return ticket

    def _price(self, req: int) -> float:
        ticket = self._queued[req]
        ticket.cost, ticket.ratio, ticket.est_output = self.estimator.price(ticket.input_tokens, ticket.max_tokens, ticket.scope_key)
        return ticket.cost

    def _dispatch_while_free(self) -> None:
        sched = self._sched
        if sched.clocked:
            sched.now = self.now()
        while self.inflight < self.slots and sched.backlogged > 0:
            req, _user, cost, v, meter, _deficit, _credit = sched.dispatch(self._price)
            self._attributes.forget(req)
            ticket = self._queued.pop(req)
            self._queued_by_user[ticket.user] -= 1
            self._inflight_by_user[ticket.user] += 1
            self.inflight += 1
            ticket.stage = Stage.RUNNING
            ticket.dispatched_t = self.now()
            said: EventExtras = {"cost": cost, "ratio": ticket.ratio, "est_output": ticket.est_output}
            if self._placer is not None:
                said.update(self._placer(ticket))
            self._emit("dispatch", ticket, v, meter, **said)
            ticket.settled.set_result(None)
            self._reset_if_idle()

    def started(self, ticket: Ticket, engine_t: float, upstream: str, not_before: float) -> None:
        """The upstream's engine reported when the request began running (``engine_t``, Unix
        seconds): a ``start`` event at that time on this dispatcher's clock, but never before
        ``not_before``, the last event's (the report comes after the events published
        meanwhile), nor after now (the engine's clock may run ahead)."""
        if ticket.stage is not Stage.RUNNING:
            return
        now = self.now()
        self._emit("start", ticket, None, None, at=min(now, max(not_before, now - (time.time() - engine_t))), upstream=upstream)

    def _reset_if_idle(self) -> None:
        if self._sched.backlogged == 0:
            self._emit("idle_reset", None, self._sched.idle_reset(), None)

    def cancel(self, ticket: Ticket) -> None:
        """Take a queued request out, uncharged (its client went away, or the proxy is closing)."""
        if ticket.stage is not Stage.QUEUED:
            raise RuntimeError(f"{ticket.request_id} is {ticket.stage.value}, not queued")
        del self._queued[ticket.req]
        self._queued_by_user[ticket.user] -= 1
        ticket.stage = Stage.CANCELLED
        v, meter, _ = self._sched.cancel(ticket.req, ticket.user)
        self._attributes.forget(ticket.req)
        self._emit("cancel", ticket, v, meter)
        if not ticket.settled.done():
            ticket.settled.set_result(None)
        self._reset_if_idle()

    def finish(self, ticket: Ticket, output_tokens: int | None, cached_tokens: int | None = None) -> None:
        """A dispatched request ended (answered, failed or abandoned): free its slot, learn from its
        output; ``cached_tokens``: of its prompt, those its upstream said its prefix cache held."""
        if ticket.stage is not Stage.RUNNING:
            raise RuntimeError(f"{ticket.request_id} is {ticket.stage.value}, not running")
        ticket.stage = Stage.DONE
        ticket.finished_t = self.now()
        self.inflight -= 1
        self._inflight_by_user[ticket.user] -= 1
        if output_tokens is not None and ticket.max_tokens is not None:
            self.estimator.learn(output_tokens, ticket.max_tokens, ticket.scope_key)
        v, meter, _ = self._sched.complete(ticket.req, ticket.user, 0.0)
        said: EventExtras = {"output_tokens": output_tokens}
        if cached_tokens is not None:
            said["cached_tokens"] = cached_tokens
        self._emit("complete", ticket, v, meter, **said)
        self._dispatch_while_free()

    def release(self, ticket: Ticket, output_tokens: int | None = None, cached_tokens: int | None = None) -> None:
        """End a request at whatever stage it is: cancel it if queued, finish it if running, nothing if already ended."""
        if ticket.stage is Stage.QUEUED:
            self.cancel(ticket)
        elif ticket.stage is Stage.RUNNING:
            self.finish(ticket, output_tokens, cached_tokens)

    def resize(self, slots: int) -> None:
        """Slots are now ``slots`` (``--slots auto``: the upstreams' limits changed); fewer stop
        dispatches until enough requests end, more dispatch at once."""
        self.slots = max(1, slots)
        self._dispatch_while_free()

    def occupy(self, n: int) -> None:
        """``n`` slots are taken by requests this dispatcher does not run (a group replica's,
        dispatched by the store before it went away); ``free_slot`` gives one back."""
        self.inflight += n

    def free_slot(self) -> None:
        self.inflight -= 1
        self._dispatch_while_free()

    def close(self) -> None:
        """Refuse new requests and cancel every queued one (their waiters see stage CANCELLED)."""
        self.closing = True
        for ticket in list(self._queued.values()):
            self.cancel(ticket)

    def state(self, seq: int) -> SchedulerState:
        """The §8 snapshot as of event ``seq`` (plus the scheduler and the time, for a client's status line)."""
        return {
            "seq": seq,
            "t": self.now(),
            "scheduler": self.scheduler,
            "v": self.v,
            "slots": self.slots,
            "inflight": self.inflight,
            "users": [{"user": u, "meter": self.meter(u), "weight": self.weight(u), "queued": self.queued(u), "inflight": self.running(u)}
                      for u in self.users()],
        }


def _number(value: float | None) -> float | None:
    """None for NaN, which a policy's meter is when its user has nothing queued (JSON has no NaN)."""
    return None if value is None or value != value else value
