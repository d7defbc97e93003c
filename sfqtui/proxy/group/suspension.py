"""Suspended: while the store is away, a replica serves its requests with a local SFQ on its
share of the slots, and says that the group's bound is suspended."""

from __future__ import annotations

import logging

from sfqtui.core.pricing.estimator import CostEstimator
from sfqtui.protocol import SCHEDULER, SUSPENDED, Event, ProxyState
from sfqtui.proxy.dispatcher import Dispatcher, Stage, Ticket
from sfqtui.proxy.group.base import GroupBase, GroupTicket

log = logging.getLogger("sfqtui.proxy")


def share_of(slots: int, replicas: list[str], me: str) -> int:
    """Replica k of K's part of the pool (§11's split): C // K, one more for the first C % K."""
    members = sorted(replicas, key=int) if me in replicas else sorted([*replicas, me], key=int)
    k, count = members.index(me), len(members)
    return max(1, slots // count + (1 if k < slots % count else 0))


class Suspension(GroupBase):
    """The local SFQ this replica serves with while the store is away."""

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
            self.charges[ticket.user] += (event["cost"] or 0.0) / self.weight(ticket.user)

    def _local_tickets(self) -> list[GroupTicket]:
        return sorted((t for t in self._outside if t.local is not None), key=lambda t: t.n)

    def _local_state(self) -> ProxyState:
        local = self.local
        if local is None:
            return {"seq": self.ring.last_seq, "v": 0.0, "users": [], "run": self.run, "t": self.now(), "scheduler": SCHEDULER, "slots": 0,
                    "inflight": self.inflight, "replicas": len(self.replicas), **self.bound_fields()}
        return {**local.state(self.ring.last_seq), "run": self.run, "t": self.now(), "scheduler": SCHEDULER, "slots": local.slots,
                "inflight": self.inflight, "replicas": len(self.replicas), **self.bound_fields()}
