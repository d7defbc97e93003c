"""A replica of a group sharing one SFQ through the store (semantics §12, ``--state``).

The store decides every dispatch (``sfqtui.proxy.store``); this replica holds its clients'
connections. A request is queued in the store by one script call (which also dispatches
whatever the free slots allow); the replica hears of a dispatch of its own request in that
call's reply or, when another replica's call dispatched it, from the group's event stream,
which it follows with a blocking read and serves to its own clients (``EventRing``). The
operations of one turn of the event loop share one call (``Batch``).

When the store does not answer, the replica is *suspended*: it serves its requests with a
local SFQ (``Dispatcher``) on its share of the slots, counting the slots its running
requests hold, and tells its stream clients that the global bound is suspended. It tries to
join again every lease period; joining settles what it held (queued requests that went
local leave the store's queues, requests that ended meanwhile complete), raises the meters
by what it charged on its own (never lowering one), and queues its still-waiting requests
in the store again under new ids. A request is sent upstream at most once: only its ticket
decides, whichever path dispatched it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import struct
import time
from collections import Counter, defaultdict
from collections.abc import Hashable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis.exceptions import RedisError

from sfqtui.core.engine.estimator import CostEstimator, EstimatorParams
from sfqtui.protocol import SCHEDULER, Event
from sfqtui.proxy.dispatcher import Closing, Dispatcher, Stage, Ticket
from sfqtui.proxy.metrics import ProxyMetrics
from sfqtui.proxy.ring import EventRing
from sfqtui.proxy.store.batch import Batch
from sfqtui.proxy.store.client import PREFIX, Store, StoreAway

log = logging.getLogger("sfqtui.proxy")
_NUMBERS, _LENGTH = struct.Struct("<ddd"), struct.Struct("<H")
# The layout of the store's keys (sfqtui.proxy.store): a group's settings name it, so that
# replicas of another layout never share a run.
STORE_LAYOUT = 2
EVENTS = PREFIX + "events"
GLOBAL, SUSPENDED = "global", "suspended"
READ_BLOCK_S = 1.0


class GroupError(Exception):
    """The group cannot be joined as asked (other settings, or no store at start)."""


class GroupTicket(Ticket):
    """A request of this replica. ``local`` links it to the local dispatcher's ticket while
    the store is away; ``held``: it runs on a slot held outside the log (dispatched locally);
    ``packed``: the request as the store keeps it (``packed()``), once queued there."""

    __slots__ = ("n", "local", "held", "packed")

    def __init__(self, n: int, rid: str, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable, t: float) -> None:
        super().__init__(n, user, input_tokens, max_tokens, scope_key, t)
        self.n = n
        self.request_id = rid
        self.local: Ticket | None = None
        self.held = False
        self.packed = b""


def packed(rid: str, replica: str, ticket: Ticket, weight: float) -> bytes:
    """A request as the store keeps it (lib.lua's unpack_req reads it without parsing a number):
    input tokens, cap (-1 if none) and weight as binary doubles (Lua's numbers), then id, replica,
    weight as text (for the events), user, scope key and user as JSON, each after its length."""
    cap = -1 if ticket.max_tokens is None else ticket.max_tokens
    texts = (rid, replica, repr(weight), ticket.user, "" if ticket.scope_key is None else str(ticket.scope_key), json.dumps(ticket.user))
    return _NUMBERS.pack(ticket.input_tokens, cap, weight) + b"".join(_LENGTH.pack(len(b)) + b for b in (t.encode() for t in texts))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def share_of(slots: int, replicas: list[str], me: str) -> int:
    """Replica k of K's part of the pool (§11's split): C // K, one more for the first C % K."""
    members = sorted(replicas, key=int) if me in replicas else sorted([*replicas, me], key=int)
    k, count = members.index(me), len(members)
    return max(1, slots // count + (1 if k < slots % count else 0))


def redacted(url: str) -> str:
    """The store's URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username + ':' if parts.username else ''}***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def group_settings(slots: int, ring: int, estimator: EstimatorParams) -> str:
    """What every replica of a group must share, as the store keeps it (JSON)."""
    priced = {k: v for k, v in estimator.as_dict().items() if k != "oracle"}
    return json.dumps({"slots": slots, "ring": ring, "estimator": priced, "layout": STORE_LAYOUT}, sort_keys=True)


def check_store(url: str, timeout_s: float, settings: str) -> None:
    """Before serving: the store answers, and a group already running there has these settings (InputError if not)."""
    import redis

    from sfqtui.errors import InputError

    client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    try:
        running = client.hget(PREFIX + "run", "settings")
    except (RedisError, OSError) as exc:
        raise InputError(f"--state {redacted(url)}: the store does not answer ({type(exc).__name__}: {exc})") from None
    finally:
        client.close()
    if running is not None and _text(running) != settings:
        raise InputError(f"--state {redacted(url)}: the group there runs with other settings ({_text(running)}); "
                         "every replica needs the same --slots, --ring and estimator options")


class Group:
    def __init__(self, url: str, address: str, slots: int, ring: EventRing, weights: dict[str, float], estimator: EstimatorParams,
                 lease_s: float, timeout_s: float, metrics: ProxyMetrics) -> None:
        self.store = Store(url, timeout_s, metrics.store_call)
        self.batch = Batch(self.store, lambda: (self.run, self.replica), self._answered)
        self.shown_url = redacted(url)
        self.address = address
        self.slots = slots
        self.ring = ring
        self.weights = weights
        self.estimator = estimator
        self.lease_s = lease_s
        self.metrics = metrics
        self.incarnation = secrets.token_hex(8)
        self.settings_json = group_settings(slots, ring.size, estimator)
        self.run = ""
        self.started = 0.0
        self.replica = ""
        self.replicas: list[str] = []
        self.mode = GLOBAL
        self.closing = False
        self.inflight = 0  # this replica's requests running (any path)
        self.outcomes: Counter[str] = Counter()
        self.tickets: dict[str, GroupTicket] = {}  # queued in the store, or running on a store slot
        self._outside: set[GroupTicket] = set()  # on the local SFQ, or running on a slot held outside the log
        self.local: Dispatcher | None = None
        # Ran on a store slot and ended while the store was away: output tokens, and the request as the store keeps it.
        self.finished: dict[str, tuple[int | None, bytes]] = {}
        self.charges: defaultdict[str, float] = defaultdict(float)  # c / w charged on the local SFQ
        self.last_state: dict[str, Any] = {}
        self._next_n = 0
        self._last_id = "0-0"
        self._loops: list[asyncio.Task[None]] = []
        self._stopped = False

    # Membership

    def now(self) -> float:
        """Seconds since the group's run started (the events' t, by this host's clock)."""
        return time.time() - self.started

    async def start(self) -> None:
        try:
            await self._join()
        except StoreAway as exc:
            raise GroupError(f"--state {self.shown_url}: the store does not answer ({exc})") from None
        await self._load_ring()
        self._loops = [asyncio.create_task(self._follow()), asyncio.create_task(self._keep_lease())]

    async def _join(self) -> None:
        keep = [rid for rid, t in self.tickets.items() if t.stage is Stage.RUNNING]
        sent = dict(self.finished)
        finished = [x for rid, (output, _) in sent.items() for x in (rid, "" if output is None else str(output))]
        counted = {t for t in self._outside if t.stage is Stage.RUNNING}
        charges = dict(self.charges)
        flat = [x for user, charge in charges.items() for x in (user, repr(charge), repr(self.weight(user)))]
        reply = await self.store.call("join", self.address, self.incarnation, self.settings_json, self.lease_s, secrets.token_hex(8),
                                      len(keep), *keep, len(sent), *finished, len(counted),
                                      self.ring.last_seq if self.mode == SUSPENDED else "", len(charges), *flat)
        if _text(reply[0]) == "settings":
            raise GroupError(f"--state {self.shown_url}: the group runs with other settings ({_text(reply[1])}); "
                             "every replica needs the same --slots, --ring and estimator options")
        run, started, replica, next_n, replicas, own, settled = reply
        new_run = _text(run) != self.run
        self.run, self.started, self.replica = _text(run), float(_text(started)), _text(replica)
        self._next_n = max(self._next_n, int(next_n))
        self.replicas = [_text(r) for r in replicas]
        if new_run and self.ring.next_seq > 0:
            self.ring.restart(self.run, self.started)
            self._last_id = "0-0"
        else:
            self.ring.run, self.ring.started = self.run, self.started
        # Requests run on their own while the store was away hold slots outside the log until they end
        # (only those the store was told of; one that started meanwhile just ends).
        waiting = sorted((t for t in self._outside if t.local is not None and t.stage is Stage.QUEUED), key=lambda t: t.n)
        for ticket in list(self._outside):
            if ticket.stage is Stage.RUNNING:
                ticket.local, ticket.held = None, ticket in counted
        if _text(settled) == "1":
            for rid in keep:
                kept = self.tickets.pop(rid, None)
                if kept is not None and kept.stage is Stage.RUNNING:
                    kept.held = True
                    self._outside.add(kept)
        late = {rid: ended for rid, ended in self.finished.items() if rid not in sent}
        self.finished.clear()
        for user, charge in charges.items():
            self.charges[user] -= charge
            if not self.charges[user]:
                del self.charges[user]
        self.local = None
        if self.mode == SUSPENDED:
            log.warning("store %s answers again: replica %s rejoined the group's SFQ", self.shown_url, self.replica)
            self.mode = GLOBAL
            self.ring.set_bound(GLOBAL, "the store answers again")
        self._started_dispatches(own)
        for rid, (output, request) in late.items():
            self._complete(rid, request, output, held=False)
        for ticket in waiting:  # queued again, under new ids, in their arrival order
            ticket.local = None
            self._outside.discard(ticket)
            await self._queue(ticket, new_id=True)

    async def _load_ring(self) -> None:
        """Start with the events the store still holds (the last --ring), so every replica serves the same stream."""
        entries: Any = await self.store.redis.xrange(EVENTS)
        for entry_id, fields in entries:
            self._take(entry_id, fields, dispatches=False)

    async def _keep_lease(self) -> None:
        while not self._stopped:
            await asyncio.sleep(self.lease_s / 4 if self.mode == GLOBAL else min(1.0, self.lease_s / 4))
            if self._stopped:
                return
            try:
                if self.mode == SUSPENDED:
                    await self._join()
                    continue
                reply = await self.store.call("renew", self.run, self.replica, self.lease_s)
            except StoreAway as exc:
                self.suspend(str(exc))
                continue
            except GroupError as exc:
                log.error("%s", exc)
                continue
            if self._refused(reply):
                continue
            self._started_dispatches(reply[1])
            self.replicas = [_text(r) for r in reply[2]]

    def _refused(self, reply: Any) -> bool:
        """A reply saying the run changed or this replica was settled: it joins again, local meanwhile."""
        if isinstance(reply, list) and len(reply) == 1 and _text(reply[0]) in ("run", "gone"):
            self.suspend("the store " + ("has a new run" if _text(reply[0]) == "run" else "settled this replica (its lease ran out)"))
            return True
        return False

    async def _follow(self) -> None:
        """Follow the group's event stream: into the ring, and this replica's dispatches started."""
        reader = self.store.reader(READ_BLOCK_S)
        try:
            while not self._stopped:
                if self.mode == SUSPENDED:
                    await asyncio.sleep(0.05)
                    continue
                try:
                    reply: Any = await reader.xread({EVENTS: self._last_id}, count=4096, block=int(READ_BLOCK_S * 1000))
                except (RedisError, ConnectionError, TimeoutError, OSError):
                    await asyncio.sleep(0.1)
                    continue
                for _stream, entries in reply or ():
                    for entry_id, fields in entries:
                        self._take(entry_id, fields, dispatches=True)
        finally:
            await reader.aclose()

    def _take(self, entry_id: bytes, fields: dict[bytes, bytes], dispatches: bool) -> None:
        """One stream entry: one script's events (id ``<first seq>-<count>``, their JSON one per
        line, one t) and its dispatches (JSON: [replica, request id, cost, user] each)."""
        self._last_id = entry_id.decode()
        seq = int(self._last_id.partition("-")[0])
        t = float(fields[b"t"])
        for data in fields[b"e"].split(b"\n"):
            self.ring.put(seq, t, data)
            seq += 1
        if b"d" in fields:
            me, own = int(self.replica), list[Any]()
            for replica, rid, cost, user in json.loads(fields[b"d"]):
                self.metrics.fairness.add(user, cost / self.weight(user))
                if dispatches and replica == me:
                    own += (rid, cost)
            if own:
                self._started_dispatches(own)

    # Requests

    def weight(self, user: str) -> float:
        return self.weights.get(user, 1.0)

    async def arrive(self, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable) -> GroupTicket:
        if self.closing:
            raise Closing()
        ticket = GroupTicket(0, "", user, input_tokens, max_tokens, scope_key, self.now())
        if self.mode == SUSPENDED:
            self._go_local(ticket)
        else:
            await self._queue(ticket, new_id=True)
        return ticket

    async def _queue(self, ticket: GroupTicket, new_id: bool) -> None:
        if new_id:
            ticket.n = self._next_n
            self._next_n += 1
            ticket.request_id = f"r{self.replica}-{ticket.n}"
        rid = ticket.request_id
        self.tickets[rid] = ticket
        ticket.packed = packed(rid, self.replica, ticket, self.weight(ticket.user))
        try:
            reply = await self.batch.add("a", ticket.packed)
        except StoreAway as exc:
            self.suspend(str(exc))
            self._strand(ticket)
            return
        if self._refused(reply):
            self._strand(ticket)

    def _answered(self, reply: Any) -> None:
        """A batch's reply, once for all its operations: this replica's dispatches start."""
        if not self._refused(reply):
            self._started_dispatches(reply[1])

    def _strand(self, ticket: GroupTicket) -> None:
        """A request whose arrival the store may not have seen, while suspended: it goes local
        (``suspend`` took it if it was the first to fail)."""
        if self.mode == SUSPENDED and self.tickets.get(ticket.request_id) is ticket and ticket.stage is Stage.QUEUED:
            del self.tickets[ticket.request_id]
            self._go_local(ticket)

    def _started_dispatches(self, own: list[Any]) -> None:
        """Requests the store dispatched for this replica: (id, cost) pairs, flat (as text, or a
        stream entry's id and number). A request already started (or ended, or gone local) is
        left alone: joining settles the rest."""
        for k in range(0, len(own), 2):
            ticket = self.tickets.get(_text(own[k]))
            if ticket is None or ticket.stage is not Stage.QUEUED:
                continue
            ticket.stage = Stage.RUNNING
            cost = own[k + 1]
            ticket.cost = float(cost) if isinstance(cost, (int, float)) else float(_text(cost))
            ticket.dispatched_t = self.now()
            self.inflight += 1
            ticket.settled.set_result(None)
            self.metrics.count_dispatch(ticket.user, ticket.cost or 0.0, ticket.dispatched_t - ticket.arrived_t)

    def release(self, ticket: Ticket, output_tokens: int | None = None) -> None:
        """End a request at whatever stage it is (from the exchange, which does not wait for the store)."""
        assert isinstance(ticket, GroupTicket)
        if ticket.local is not None:
            assert self.local is not None
            was_running = ticket.local.stage is Stage.RUNNING
            self.local.release(ticket.local, output_tokens)
            if was_running:
                self._finished(ticket, output_tokens)
            elif ticket.stage is Stage.QUEUED:
                ticket.stage = Stage.CANCELLED
                self.outcomes["cancelled"] += 1
            self._outside.discard(ticket)
            return
        rid = ticket.request_id
        if ticket.stage is Stage.QUEUED:
            ticket.stage = Stage.CANCELLED
            self.outcomes["cancelled"] += 1
            if self.mode == GLOBAL:
                self._cancel(rid, ticket.packed)
            else:
                self.tickets.pop(rid, None)
        elif ticket.stage is Stage.RUNNING:
            self._finished(ticket, output_tokens)
            on_store_slot = self.tickets.pop(rid, None) is not None
            self._outside.discard(ticket)
            if self.mode == SUSPENDED:
                if on_store_slot:
                    self.finished[rid] = (output_tokens, ticket.packed)
                if on_store_slot or ticket.held:
                    assert self.local is not None
                    self.local.free_slot()
            elif on_store_slot or ticket.held:
                self._complete(rid, ticket.packed, output_tokens, held=ticket.held)

    def _finished(self, ticket: GroupTicket, output_tokens: int | None) -> None:
        ticket.stage = Stage.DONE
        ticket.finished_t = self.now()
        self.inflight -= 1

    def _cancel(self, rid: str, request: bytes) -> None:
        def cancelled(call: asyncio.Future[Any]) -> None:
            self.tickets.pop(rid, None)
            self._failed(call)

        self.batch.add("x", request).add_done_callback(cancelled)

    def _complete(self, rid: str, request: bytes, output_tokens: int | None, held: bool) -> None:
        def completed(call: asyncio.Future[Any]) -> None:
            if isinstance(call.exception(), StoreAway) and not held:
                self.finished[rid] = (output_tokens, request)
            self._failed(call)

        self.batch.add("c", request, "" if output_tokens is None else output_tokens, "1" if held else "0").add_done_callback(completed)

    def _failed(self, call: asyncio.Future[Any]) -> None:
        """An operation nobody awaits: the store away suspends the replica; a script's error is a bug, raised."""
        exc = call.exception()
        if isinstance(exc, StoreAway):
            self.suspend(str(exc))
        elif exc is not None:
            raise exc

    # Suspended: a local SFQ on this replica's share of the slots

    def suspend(self, reason: str) -> None:
        if self.mode == SUSPENDED or self._stopped:
            return
        self.mode = SUSPENDED
        share = share_of(self.slots, self.replicas, self.replica)
        log.warning("store %s does not answer (%s): replica %s serves on its own, %d slot(s); the global bound is suspended",
                    self.shown_url, reason, self.replica, share)
        self.ring.set_bound(SUSPENDED, reason)
        self.local = Dispatcher(share, dict(self.weights), CostEstimator(self.estimator), sinks=(self._local_event,))
        running = [t for t in self.tickets.values() if t.stage is Stage.RUNNING]
        self.local.occupy(len(running) + self._held_running())
        for ticket in sorted((t for t in self.tickets.values() if t.stage is Stage.QUEUED), key=lambda t: t.n):
            del self.tickets[ticket.request_id]
            self._go_local(ticket)

    def _held_running(self) -> int:
        return sum(1 for t in self._outside if t.stage is Stage.RUNNING)

    def _go_local(self, ticket: GroupTicket) -> None:
        assert self.local is not None
        local = self.local.arrive(ticket.user, ticket.input_tokens, ticket.max_tokens, ticket.scope_key)
        ticket.local = local
        self._outside.add(ticket)
        local.settled.add_done_callback(lambda _: self._local_settled(ticket))

    def _local_settled(self, ticket: GroupTicket) -> None:
        local = ticket.local
        if local is None or ticket.stage is not Stage.QUEUED:
            return
        if local.stage is Stage.RUNNING:
            ticket.stage = Stage.RUNNING
            ticket.cost, ticket.ratio, ticket.est_output = local.cost, local.ratio, local.est_output
            ticket.dispatched_t = self.now()
            self.inflight += 1
            self.metrics.count_dispatch(ticket.user, ticket.cost or 0.0, ticket.dispatched_t - ticket.arrived_t)
        else:
            ticket.stage = Stage.CANCELLED
        ticket.settled.set_result(None)

    def _local_event(self, event: Event, ticket: Ticket | None) -> None:
        if event["kind"] == "dispatch" and ticket is not None:
            self.charges[ticket.user] += event["cost"] / self.weight(ticket.user)

    def _local_tickets(self) -> list[GroupTicket]:
        return sorted((t for t in self._outside if t.local is not None), key=lambda t: t.n)

    # The snapshot, and stopping

    async def state(self) -> dict[str, Any]:
        """The §8 snapshot from the store (the same on every replica); while suspended, this replica's own."""
        if self.mode == GLOBAL:
            try:
                reply = await self.store.call("state")
            except StoreAway as exc:
                self.suspend(str(exc))
            else:
                if _text(reply[0]) == "ok":
                    self.last_state = self._snapshot(reply)
                    return self.last_state
        return self._local_state()

    def _snapshot(self, reply: list[Any]) -> dict[str, Any]:
        _, run, seq, t, v, slots, inflight, replicas, rows = reply
        users: list[dict[str, Any]] = [{"user": _text(u), "meter": float(_text(m)), "weight": float(_text(w)), "queued": int(q), "inflight": int(r)}
                                       for u, m, w, q, r in rows]
        users.sort(key=lambda row: str(row["user"]))
        return {"run": _text(run), "seq": int(seq), "t": float(_text(t)), "scheduler": SCHEDULER, "v": float(_text(v)),
                "slots": int(slots), "inflight": int(inflight), "bound": GLOBAL, "replicas": len(replicas), "users": users}

    def _local_state(self) -> dict[str, Any]:
        local = self.local
        state = local.state(self.ring.last_seq) if local is not None else {"seq": self.ring.last_seq, "v": 0.0, "users": []}
        return {**state, "run": self.run, "t": self.now(), "scheduler": SCHEDULER, "slots": local.slots if local else 0,
                "inflight": self.inflight, "bound": SUSPENDED, "replicas": len(self.replicas)}

    def close(self) -> None:
        """Draining: refuse new requests and cancel this replica's queued ones (only its own)."""
        self.closing = True
        queued = [t for t in [*self.tickets.values(), *self._local_tickets()] if t.stage is Stage.QUEUED]
        for ticket in sorted(queued, key=lambda t: t.n):
            self.release(ticket)
            if not ticket.settled.done():
                ticket.settled.set_result(None)

    async def leave(self) -> None:
        """After draining: hand back whatever is left, stop following the store."""
        await self.batch.drain(self.store.timeout_s * 2)
        self._stopped = True
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        if self.mode == GLOBAL and self.run:
            try:
                await self.store.call("leave", self.run, self.replica)
            except StoreAway as exc:
                log.warning("could not leave the group cleanly (%s); the others settle this replica when its lease runs out", exc)
        await self.store.aclose()
