"""Several balancer replicas behind a router (semantics §11): the layer the replay's one
loop calls when its config has more than one replica.

Each request is routed at its arrival and stays on its replica. Under share ``none`` and
``sync`` every replica has its own scheduler, estimator and slots (a pool each); under
``global`` there is one scheduler, one estimator and one pool of all the slots, and the
replica only names where the request was held. At a timestamp: every completion, every
arrival (routed in arrival order), the sync publications due, then each pool dispatches
in index order while it has a free slot and a waiting request.

So under ``none`` each replica's events are exactly a one-scheduler replay of the
requests routed to it, and under ``global`` the events are exactly those of one
scheduler over the whole trace; the tests check both.
"""

from __future__ import annotations

from collections.abc import Sequence

from sfqtui.core.events import SYNC, EventLog
from sfqtui.core.replicas.routers import LeastLoadedRouter, StaticRouter, router_for
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.core.replicas.sync import Exchange, Publication
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers.base import Scheduler, User
from sfqtui.core.schedulers.sfq import SFQ


class ReplicaGroup:
    """Routes arrivals to pools, names the replica of every event, and runs share sync's
    exchange for a replay of ``settings.count`` > 1 replicas, whose pools' ``schedulers``
    append to ``log``."""

    def __init__(self, settings: ReplicaSettings, users: Sequence[str], weights: dict[int, float], schedulers: list[Scheduler],
                 log: EventLog) -> None:
        self.split = settings.share.splits_slots
        self.router = router_for(settings, users)
        self._static = self.router if isinstance(self.router, StaticRouter) else None
        self._pick = self.router.pick if isinstance(self.router, LeastLoadedRouter) else None
        self._load = [0] * settings.count if self._pick is not None else None
        self._routes: Sequence[int] = ()
        self._held: dict[int, int] = {}  # global: each queued request's replica
        self._weights = weights
        self._schedulers = schedulers
        self._log = log
        self._meters = [sched.meters for sched in schedulers if isinstance(sched, SFQ)]  # what sync publishes
        self.exchange: Exchange | None = None
        if settings.share.mode == "sync":
            assert settings.share.every_s is not None  # Share requires a period for sync
            self.exchange = Exchange(settings.count, settings.share.every_s, settings.share.delay_s)
        self.due = self.exchange.due if self.exchange is not None else float("inf")  # when exchange_until next has work

    def enter(self, trace: Trace, start: int) -> None:
        """A chunk of requests enters, the first being arrival number ``start``: static routers route it whole."""
        if self._static is not None:
            self._routes = self._static.assign(trace, start)

    def arrive(self, i: int, j: int, user: User) -> int:
        """Request ``i`` (row ``j`` of its chunk) arrives: its replica."""
        rep = self._routes[j] if self._pick is None else self._pick(self._load)  # type: ignore[arg-type]  # load is kept when pick is
        if self._load is not None:
            self._load[rep] += 1
        if not self.split:
            self._held[i] = rep
        if self.exchange is not None:
            self.exchange.touched.add(user)
        return rep

    def dispatched(self, pool: int, req: int, user: User, cost: float) -> int:
        """Pool ``pool`` dispatched ``req``: the replica that held it."""
        rep = pool if self.split else self._held.pop(req)
        if self.exchange is not None:
            weights = self._weights
            self.exchange.charge(rep, user, cost / weights[user] if user in weights else cost)
        return rep

    def completed(self, rep: int) -> None:
        if self._load is not None:
            self._load[rep] -= 1

    def exchange_until(self, now: float) -> None:
        """The sync exchanges due before anything happens at ``now``, in time order: an
        application due before now (at its own time), a publication due at or before now."""
        exchange = self.exchange
        assert exchange is not None  # due is infinite without one
        while True:
            pending = exchange.pending
            if pending is not None and pending.apply_at < now:
                self._apply(exchange.take())
            elif exchange.publish_at <= now:
                exchange.publish(self._meters, now)
            else:
                break
        self.due = exchange.due

    def apply_due(self, now: float) -> None:
        """The exchange published earlier lands at ``now``, after this timestamp's arrivals."""
        exchange = self.exchange
        assert exchange is not None and exchange.pending is not None and exchange.pending.apply_at == now
        self._apply(exchange.take())
        self.due = exchange.due

    def _apply(self, publication: Publication) -> None:
        """Every replica raises its meters to the published ones plus what it charged since (sync rows, at their time)."""
        exchange = self.exchange
        assert exchange is not None
        pack = self._log.layout.uncharged.pack
        put = self._log.data.extend
        t = publication.apply_at
        nan = float("nan")
        tail = self._log.layout.tail  # a sync row names no engine
        for rep, sched in enumerate(self._schedulers):
            assert isinstance(sched, SFQ)  # ReplicaSettings.check: sync needs meters and v
            since = exchange.charges[rep]
            targets = [(user, meter + since[user] if user in since else meter) for user, meter in publication.meters.items()]
            for user, meter in sched.raise_meters(targets):
                exchange.touched.add(user)
                put(pack(t, SYNC, -1, sched.v, meter, nan, rep, user, *tail))
