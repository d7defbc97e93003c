"""What the parts of a group replica share: its fields (``GroupBase``), its requests'
tickets, and what one part asks of another (declared here, defined in the part named)."""

from __future__ import annotations

import asyncio
import secrets
import time
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Hashable
from typing import Any

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.protocol import GLOBAL, BoundFields, ProxyState
from sfqtui.proxy.dispatcher import Dispatcher, Ticket
from sfqtui.proxy.group.precheck import redacted
from sfqtui.proxy.group.wire import group_settings
from sfqtui.proxy.metrics import ProxyMetrics
from sfqtui.proxy.ring import EventRing
from sfqtui.proxy.store.batch import Batch
from sfqtui.proxy.store.client import Store
from sfqtui.proxy.store.replies import Answered, Dispatched, Refused


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


class GroupBase(ABC):
    """A replica's fields, which every part reads and changes; ``Group`` puts the parts together."""

    def __init__(self, url: str, address: str, slots: int, ring: EventRing, weights: dict[str, float], estimator: EstimatorParams,
                 lease_s: float, timeout_s: float, metrics: ProxyMetrics, auto_maximum: int | None = None) -> None:
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
        self.settings_json = group_settings(slots, ring.size, estimator, auto_maximum)
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
        self.reporting: dict[str, asyncio.Future[Any]] = {}  # request id -> the call reporting its start, while in flight
        self.charges: defaultdict[str, float] = defaultdict(float)  # c / w charged on the local SFQ
        self.last_state: ProxyState | None = None
        self._next_n = 0
        self._last_id = "0-0"
        self._loops: list[asyncio.Task[None]] = []
        self._stopped = False

    def now(self) -> float:
        """Seconds since the group's run started (the events' t, by this host's clock)."""
        return time.time() - self.started

    def weight(self, user: str) -> float:
        return self.weights.get(user, 1.0)

    def bound_fields(self) -> BoundFields:
        """The bound, since when (Unix time, and the last seq before it) and why, as the state gives them."""
        bound = self.ring.bound
        if bound is None:
            return {"bound": self.mode, "bound_since": None, "bound_since_seq": None, "bound_reason": None}
        return {"bound": self.mode, "bound_since": bound["since"], "bound_since_seq": bound["since_seq"], "bound_reason": bound["reason"]}

    # What one part asks of another

    @abstractmethod
    def _answered(self, reply: Answered | Refused) -> None:
        """replica: a batch's reply."""

    @abstractmethod
    async def _queue(self, ticket: GroupTicket, new_id: bool) -> None:
        """replica: queue a request in the store."""

    @abstractmethod
    def _started_dispatches(self, dispatched: Dispatched) -> None:
        """replica: requests the store dispatched for this replica."""

    @abstractmethod
    def _complete(self, rid: str, request: bytes, output_tokens: int | None, held: bool) -> None:
        """replica: tell the store a request ended."""

    @abstractmethod
    def _refused(self, refusal: Refused) -> None:
        """membership: a reply saying the run changed or this replica was settled."""

    @abstractmethod
    async def _load_ring(self) -> None:
        """following: the events the store still holds."""

    @abstractmethod
    async def _follow(self) -> None:
        """following: the group's event stream."""

    @abstractmethod
    def suspend(self, reason: str) -> None:
        """suspension: serve on this replica's own, the store being away."""

    @abstractmethod
    def _go_local(self, ticket: GroupTicket) -> None:
        """suspension: a request to the local SFQ."""

    @abstractmethod
    def _local_tickets(self) -> list[GroupTicket]:
        """suspension: the requests on the local SFQ."""

    @abstractmethod
    def _local_state(self) -> ProxyState:
        """suspension: the local SFQ's snapshot."""
