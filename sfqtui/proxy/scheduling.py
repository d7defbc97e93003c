"""What the proxy asks of its scheduler (``Scheduling``), and a lone proxy's (``Alone``).

Two schedulers implement it: ``Alone``, the local SFQ of a proxy on its own, and
``sfqtui.proxy.group.Group``, a replica of a group sharing one SFQ through the store
(``--state``). The proxy's HTTP side (``sfqtui.proxy.app``) talks to either the same way.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Protocol

from sfqtui.core.pricing.estimator import CostEstimator, EstimatorParams
from sfqtui.protocol import SCHEDULER, Event, ProxyState
from sfqtui.proxy.attributes import NO_POLICY, RequestPolicy
from sfqtui.proxy.dispatcher import Dispatcher, Placer, Sink, Ticket
from sfqtui.proxy.ring import EventRing


class Scheduling(Protocol):
    """A scheduler as the proxy uses it, from ``start`` (before serving) to ``leave`` (after draining)."""

    @property
    def inflight(self) -> int:
        """This process's requests holding a slot."""
        ...

    async def start(self) -> None: ...

    async def arrive(self, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable,
                     policy: RequestPolicy = NO_POLICY, blocks: Sequence[int] = ()) -> Ticket:
        """Queue a request (``Closing`` once draining); its ticket's ``settled`` resolves when it is dispatched or cancelled.
        ``policy``: what the request says of itself (semantics §15), which a lone proxy's scheduler other than SFQ reads;
        ``blocks``: its prompt's, which a lone proxy's placer reads at dispatch."""
        ...

    def release(self, ticket: Ticket, output_tokens: int | None = None, cached_tokens: int | None = None) -> None:
        """End a request at whatever stage it is (cancelled if queued, finished if running);
        ``cached_tokens``: of its prompt, those its upstream's prefix cache held (a lone proxy's complete event says it)."""
        ...

    def weight(self, user: str) -> float: ...

    def now(self) -> float:
        """The events' clock: seconds since the run started."""
        ...

    def engine_started(self, ticket: Ticket, engine_t: float, upstream: str) -> None:
        """The upstream's engine reported when the request began running (Unix seconds): a start event."""
        ...

    def limit_changed(self, upstream: str, limit: int, total: int, reason: str) -> None:
        """``--slots auto``: the upstream's limit is now ``limit`` (because of ``reason``), and the limits' sum ``total``."""
        ...

    def publish(self, event: Event) -> None:
        """Put an event that is not the scheduler's own (an upstream's limit changed) in the stream."""
        ...

    async def state(self) -> ProxyState:
        """The §8 snapshot, read now."""
        ...

    def current_state(self) -> ProxyState:
        """The §8 snapshot without waiting (for the metrics' collector)."""
        ...

    def close(self) -> None:
        """Draining: refuse new requests and cancel the queued ones."""
        ...

    async def leave(self) -> None:
        """After draining: let go of whatever is left."""
        ...


class Alone:
    """A lone proxy's scheduler: one Dispatcher, whose events are numbered into the proxy's ring;
    ``placer`` places each dispatch on an upstream, which its event names."""

    def __init__(self, slots: int, weights: dict[str, float], estimator: EstimatorParams, ring: EventRing, sinks: Iterable[Sink],
                 scheduler: str = SCHEDULER, placer: Placer | None = None) -> None:
        self.ring = ring
        self.dispatcher = Dispatcher(slots, weights, CostEstimator(estimator), sinks=(self._publish, *sinks), scheduler=scheduler,
                                     placer=placer)

    def _publish(self, event: Event, _ticket: Ticket | None) -> None:
        self.ring.publish(event)

    @property
    def inflight(self) -> int:
        return self.dispatcher.inflight

    async def start(self) -> None:
        pass

    async def arrive(self, user: str, input_tokens: int, max_tokens: int | None, scope_key: Hashable,
                     policy: RequestPolicy = NO_POLICY, blocks: Sequence[int] = ()) -> Ticket:
        return self.dispatcher.arrive(user, input_tokens, max_tokens, scope_key, policy, blocks)

    def release(self, ticket: Ticket, output_tokens: int | None = None, cached_tokens: int | None = None) -> None:
        self.dispatcher.release(ticket, output_tokens, cached_tokens)

    def weight(self, user: str) -> float:
        return self.dispatcher.weight(user)

    def engine_started(self, ticket: Ticket, engine_t: float, upstream: str) -> None:
        """The upstream's engine reported when the request began running (Unix seconds)."""
        self.dispatcher.started(ticket, engine_t, upstream, self.ring.last_t)

    def now(self) -> float:
        return self.dispatcher.now()

    def limit_changed(self, upstream: str, limit: int, total: int, reason: str) -> None:
        self.dispatcher.resize(total)

    def publish(self, event: Event) -> None:
        self.ring.publish(event)

    async def state(self) -> ProxyState:
        return self.current_state()

    def current_state(self) -> ProxyState:
        return {"run": self.ring.run, **self.dispatcher.state(self.ring.last_seq)}

    def close(self) -> None:
        self.dispatcher.close()

    async def leave(self) -> None:
        pass
