"""A replica's membership of the group: joining (and settling what it held when it rejoins),
keeping its lease, and leaving."""

from __future__ import annotations

import asyncio
import logging
import secrets

from sfqtui.protocol import GLOBAL, SUSPENDED
from sfqtui.proxy.dispatcher import Stage
from sfqtui.proxy.errors import GroupError, StoreAway
from sfqtui.proxy.group.base import GroupBase
from sfqtui.proxy.store.replies import OtherSettings, Refused

log = logging.getLogger("sfqtui.proxy")


class Membership(GroupBase):
    """Joining the group (``start``; again after the store was away), the lease, leaving."""

    async def start(self) -> None:
        try:
            await self._join()
        except StoreAway as exc:
            raise GroupError(f"--state {self.shown_url}: the store does not answer ({exc})") from None
        await self._load_ring()
        self.ring.set_bound(GLOBAL, "joined the group")
        self._loops = [asyncio.create_task(self._follow()), asyncio.create_task(self._keep_lease())]

    async def _join(self) -> None:
        keep = [rid for rid, t in self.tickets.items() if t.stage is Stage.RUNNING]
        sent = dict(self.finished)
        finished = [x for rid, (output, _) in sent.items() for x in (rid, "" if output is None else str(output))]
        counted = {t for t in self._outside if t.stage is Stage.RUNNING}
        charges = dict(self.charges)
        flat = [x for user, charge in charges.items() for x in (user, repr(charge), repr(self.weight(user)))]
        joined = await self.store.join(self.address, self.incarnation, self.settings_json, self.lease_s, secrets.token_hex(8),
                                       len(keep), *keep, len(sent), *finished, len(counted),
                                       self.ring.last_seq if self.mode == SUSPENDED else "", len(charges), *flat)
        if isinstance(joined, OtherSettings):
            raise GroupError(f"--state {self.shown_url}: the group runs with other settings ({joined.settings}); "
                             "every replica needs the same --slots, --ring and estimator options")
        new_run = joined.run != self.run
        self.run, self.started, self.replica = joined.run, joined.started, joined.replica
        self._next_n = max(self._next_n, joined.next_request)
        self.replicas = joined.replicas
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
        if joined.settled:
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
        self._started_dispatches(joined.dispatched)
        for rid, (output, request) in late.items():
            self._complete(rid, request, output, held=False)
        for ticket in waiting:  # queued again, under new ids, in their arrival order
            ticket.local = None
            self._outside.discard(ticket)
            await self._queue(ticket, new_id=True)

    async def _keep_lease(self) -> None:
        while not self._stopped:
            await asyncio.sleep(self.lease_s / 4 if self.mode == GLOBAL else min(1.0, self.lease_s / 4))
            if self._stopped:
                return
            try:
                if self.mode == SUSPENDED:
                    await self._join()
                    continue
                reply = await self.store.renew(self.run, self.replica, self.lease_s)
            except StoreAway as exc:
                self.suspend(str(exc))
                continue
            except GroupError as exc:
                log.error("%s", exc)
                continue
            if isinstance(reply, Refused):
                self._refused(reply)
                continue
            self._started_dispatches(reply.dispatched)
            self.replicas = reply.replicas

    def _refused(self, refusal: Refused) -> None:
        """The run changed or this replica was settled: it joins again, local meanwhile."""
        self.suspend("the store " + ("has a new run" if refusal.reason == "run" else "settled this replica (its lease ran out)"))

    async def leave(self) -> None:
        """After draining: hand back whatever is left, stop following the store."""
        await self.batch.drain(self.store.timeout_s * 2)
        self._stopped = True
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        if self.mode == GLOBAL and self.run:
            try:
                await self.store.leave(self.run, self.replica)
            except StoreAway as exc:
                log.warning("could not leave the group cleanly (%s); the others settle this replica when its lease runs out", exc)
        await self.store.aclose()
