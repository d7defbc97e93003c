"""``Group``: a replica of a group, assembled from its parts; here its requests (arriving,
dispatched, released), its snapshot and draining."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from typing import Any

from sfqtui.protocol import GLOBAL, SCHEDULER, SUSPENDED, Event, ProxyState
from sfqtui.proxy.attributes import NO_POLICY, RequestPolicy
from sfqtui.proxy.dispatcher import Stage, Ticket
from sfqtui.proxy.errors import Closing, StoreAway
from sfqtui.proxy.group.base import GroupTicket
from sfqtui.proxy.group.following import Following
from sfqtui.proxy.group.membership import Membership
from sfqtui.proxy.group.suspension import Suspension, share_of
from sfqtui.proxy.group.wire import packed, snapshot
from sfqtui.proxy.store.replies import Answered, Dispatched, Refused


class Group(Membership, Following, Suspension):
    """A replica of a group: what the proxy asks of its scheduler (``sfqtui.proxy.scheduling.Scheduling``)."""

    # Requests

    async def arrive(self, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable,
                     policy: RequestPolicy = NO_POLICY, blocks: Sequence[int] = ()) -> GroupTicket:
        # A group is SFQ: what a request says of its priority is not read. The store writes its
        # dispatch events, before this replica picks an upstream: they name none (docs/protocol.md).
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
        if isinstance(reply, Refused):  # _answered suspended the replica
            self._strand(ticket)

    def _answered(self, reply: Answered | Refused) -> None:
        """A batch's reply, once for all its operations: this replica's dispatches start."""
        if isinstance(reply, Refused):
            self._refused(reply)
        else:
            self._started_dispatches(reply.dispatched)

    def _strand(self, ticket: GroupTicket) -> None:
        """A request whose arrival the store may not have seen, while suspended: it goes local
        (``suspend`` took it if it was the first to fail)."""
        if self.mode == SUSPENDED and self.tickets.get(ticket.request_id) is ticket and ticket.stage is Stage.QUEUED:
            del self.tickets[ticket.request_id]
            self._go_local(ticket)

    def _started_dispatches(self, dispatched: Dispatched) -> None:
        """Requests the store dispatched for this replica (from a reply or the stream). A request
        already started (or ended, or gone local) is left alone: joining settles the rest."""
        for rid, cost in dispatched:
            ticket = self.tickets.get(rid)
            if ticket is None or ticket.stage is not Stage.QUEUED:
                continue
            ticket.stage = Stage.RUNNING
            ticket.cost = cost
            ticket.dispatched_t = self.now()
            self.inflight += 1
            ticket.settled.set_result(None)
            self.metrics.count_dispatch(ticket.user, ticket.cost or 0.0, ticket.dispatched_t - ticket.arrived_t)

    def release(self, ticket: Ticket, output_tokens: int | None = None, cached_tokens: int | None = None) -> None:
        """End a request at whatever stage it is (from the exchange, which does not wait for the store).
        The store writes the complete event: it does not carry ``cached_tokens``."""
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
        if (reporting := self.reporting.get(rid)) is not None:  # its start first: calls in flight may land in any order
            reporting.add_done_callback(lambda _call: self._complete(rid, request, output_tokens, held))
            return

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

    def engine_started(self, ticket: Ticket, engine_t: float, upstream: str) -> None:
        """The upstream's engine reported that the request began running: a start event in the
        group's stream, timed when the store takes the report (a stream entry has one time);
        none while the replica serves on its own."""
        assert isinstance(ticket, GroupTicket)
        if self.mode == GLOBAL and ticket.local is None and not ticket.held and ticket.stage is Stage.RUNNING and not self.closing:
            rid, call = ticket.request_id, self.batch.add("s", ticket.packed, upstream)
            self.reporting[rid] = call
            call.add_done_callback(lambda _call: self.reporting.pop(rid, None))
            call.add_done_callback(self._failed)

    # Limits (--slots auto)

    def limit_changed(self, upstream: str, limit: int, total: int, reason: str) -> None:
        """The group's pool is the sum of its upstreams' limits, in the store, whose stream has
        the change as a limit event (a replica that has not joined yet writes them once it has);
        a suspended replica's local SFQ takes its share at once."""
        self.slots = total
        if self.local is not None:
            self.local.resize(share_of(total, self.replicas, self.replica))
        if self.mode == GLOBAL and self.replica and not self.closing:
            self.batch.add("l", upstream, limit, reason).add_done_callback(self._failed)

    def publish(self, event: Event) -> None:
        """A group's stream is the store's, numbered there: a replica's own events are not in it."""

    # The snapshot, and draining

    async def state(self) -> ProxyState:
        """The §8 snapshot read from the store now (the same on every replica); while suspended, this replica's own."""
        if self.mode == GLOBAL:
            try:
                reply = await self.store.state()
            except StoreAway as exc:
                self.suspend(str(exc))
            else:
                if reply is not None:
                    self.last_state = snapshot(reply)
        return self.current_state()

    def current_state(self) -> ProxyState:
        """Without waiting on the store: the group's snapshot as last read while the bound holds
        (only what the replica knows of itself if none was read yet), else the local SFQ's;
        both with the bound as it is now (``bound_fields``)."""
        if self.mode == SUSPENDED:
            return self._local_state()
        known = self.last_state or {"run": self.run, "seq": self.ring.last_seq, "scheduler": SCHEDULER}
        return {"replicas": len(self.replicas), **known, **self.bound_fields()}

    def close(self) -> None:
        """Draining: refuse new requests and cancel this replica's queued ones (only its own)."""
        self.closing = True
        queued = [t for t in [*self.tickets.values(), *self._local_tickets()] if t.stage is Stage.QUEUED]
        for ticket in sorted(queued, key=lambda t: t.n):
            self.release(ticket)
            if not ticket.settled.done():
                ticket.settled.set_result(None)
