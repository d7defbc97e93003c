"""The proxy's HTTP side: OpenAI routes in front of the scheduler, the §8 stream, metrics, and shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from sfqtui.core.engines.prefix_index import PrefixIndex
from sfqtui.core.limits.settings import START
from sfqtui.protocol import LIMIT, Event, ProxyState
from sfqtui.proxy.attributes import NO_POLICY, RequestPolicy, request_policy
from sfqtui.proxy.auth import ApiKeys, EventsToken, authenticated
from sfqtui.proxy.dispatcher import EventExtras, Placed, Stage, Ticket
from sfqtui.proxy.errors import Closing, UpstreamError
from sfqtui.proxy.forward import CLIENT_GONE, Exchange, cached_tokens
from sfqtui.proxy.metrics import ProxyMetrics
from sfqtui.proxy.openai_errors import bad_request, error_response, shutting_down
from sfqtui.proxy.placement import PrefixPlacement
from sfqtui.proxy.prompt import blocks_of, model_of, output_cap, prompt_tokens
from sfqtui.proxy.ring import EventRing
from sfqtui.proxy.scheduling import Alone, Scheduling
from sfqtui.proxy.settings import ProxySettings
from sfqtui.proxy.upstream import UpstreamReply, Upstreams, UpstreamWatch

if TYPE_CHECKING:
    from sfqtui.proxy.group import Group
    from sfqtui.proxy.limits import UpstreamLimits
    from sfqtui.proxy.record import TraceRecorder


def record_row(ticket: Ticket, model: str | None, output_tokens: int | None, prompt_tokens: int | None, weight: float,
               scope: str, cached: int | None = None, blocks: list[int] | None = None, policy: RequestPolicy = NO_POLICY) -> dict[str, Any]:
    """A finished request as a row of the --record trace (semantics §1), with the times and
    charge this proxy measured; the recorder puts the published events' in their place."""
    return {
        "request_id": ticket.request_id,
        "user": ticket.user,
        "arrival_s": ticket.arrived_t,
        "input_tokens": ticket.input_tokens if prompt_tokens is None else prompt_tokens,
        "max_tokens": ticket.max_tokens,
        "output_tokens": output_tokens,
        "cost": ticket.cost,
        "service_s": max(1e-6, (ticket.finished_t or 0.0) - (ticket.dispatched_t or 0.0)),
        "weight": weight,
        "model": model,
        "ratio": ticket.ratio,
        "est_output": ticket.est_output,
        "ratio_scope": None if ticket.max_tokens is None else scope if ticket.scope_key is None else f"{scope}:{ticket.scope_key}",
        "cached_tokens": cached,
        "prefix_blocks": blocks,
        # What it said of itself, as the scheduler read it (semantics §15; null where it said nothing).
        "priority": policy.priority,
        "flow": policy.flow,
        "class": policy.policy_class,
    }

log = logging.getLogger("sfqtui.proxy")
COMPLETION_ROUTES = ("/chat/completions", "/completions")  # under /v1
# How long shutdown waits for aborted requests to wind down before it ends the event stream anyway.
ABORT_WAIT_S = 5.0


class Proxy:
    """One proxy: the scheduler, its event ring and metrics, the upstreams and the record, wired together."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.ring = EventRing(settings.ring_size)
        self.scheduling: Scheduling
        self.metrics = ProxyMetrics(settings.metrics_users, self.state, in_group=settings.state_url is not None)
        group: Group | None = None
        if settings.state_url is None:
            self.scheduling = Alone(settings.slots, dict(settings.keys.weights), settings.estimator, self.ring, sinks=(self.metrics.see,),
                                    scheduler=settings.scheduler, placer=self._place)
        else:
            from sfqtui.proxy.group import Group  # the redis client loads only for a group

            self.scheduling = group = Group(
                settings.state_url, settings.replica_name or "", settings.slots, self.ring, dict(settings.keys.weights),
                settings.estimator, settings.lease_s, settings.store_timeout_s, self.metrics,
                None if settings.limits is None else settings.limits.maximum)
        self.upstreams = Upstreams(settings.upstreams, settings.upstream_timeout_s,
                                   UpstreamWatch(self.metrics.upstream_answered, self.metrics.upstream_failed))
        self.limits: UpstreamLimits | None = None
        if settings.limits is not None:
            from sfqtui.proxy.limits import UpstreamLimits

            self.limits = UpstreamLimits(self.upstreams.bases, self.upstreams.labels, settings.limits, settings.limit_from,
                                         self._limit_changed, self.upstreams)
            self.upstreams.limit_of, self.upstreams.busy = self.limits.limit_of, self.limits.backoff
        if settings.placement == "prefix":
            self.upstreams.placement = PrefixPlacement([PrefixIndex(settings.prefix_index_blocks) for _ in settings.upstreams], self._has_room,
                                                       settings.block_tokens)
        self.recorder: TraceRecorder | None = None
        if settings.record is not None:
            from sfqtui.proxy.record import recorder_of  # polars and pyarrow load only for a recording

            self.recorder = recorder_of(settings.record, settings, group)
            self.ring.watch(self.recorder.see)
            self.ring.bound_watchers.append(self.recorder.note_bound)
        self.live: set[Exchange] = set()
        self._closed = False
        self._recording: asyncio.Task[None] | None = None
        self._probing: asyncio.Task[None] | None = None

    async def open_upstream(self, path: str, payload: bytes, stream: bool, blocks: Sequence[int] = (), placed: Placed | None = None) -> UpstreamReply:
        return await self.upstreams.open("POST", path, payload, stream, blocks, placed)

    def _place(self, ticket: Ticket) -> EventExtras:
        """A lone proxy's dispatch: its upstream, chosen now, which its event names, with what the index predicted there."""
        ticket.placed = placed = self.upstreams.place(ticket.blocks)
        said: EventExtras = {"upstream": self.upstreams.labels[placed.index]}
        if placed.held is not None:
            said["predicted_cached_tokens"] = placed.held * self.settings.block_tokens
        return said

    def _has_room(self, index: int) -> bool:
        """Whether an upstream has fewer requests in flight than its limit, or than its even share of the slots."""
        room = self.limits.limit_of(index) if self.limits is not None else -(-self.settings.slots // len(self.upstreams.bases))
        return self.upstreams.inflight[index] < room

    def _limit_changed(self, index: int, limit: int, reason: str) -> None:
        """An upstream's limit changed: the slots follow the limits' sum, and the stream says so."""
        assert self.limits is not None
        event: Event = {"seq": None, "t": self.scheduling.now(), "kind": LIMIT, "scheduler": self.settings.scheduler, "request_id": None, "user": None,
                        "cost": None, "v": None, "meter": None, "deficit": None, "upstream": self.upstreams.labels[index],
                        "limit": limit, "reason": reason}
        # The change first, then the dispatches a rise lets go: a recording times them by it (proxy/record.py).
        self.scheduling.publish(event)
        self.scheduling.limit_changed(self.upstreams.labels[index], limit, self.limits.total, reason)

    def ended(self, exchange: Exchange, output_tokens: int | None, prompt_tokens: int | None) -> None:
        self.live.discard(exchange)
        ticket = exchange.ticket
        self.metrics.ended(ticket.user, exchange.outcome)
        ran = ticket.stage is Stage.RUNNING
        self.scheduling.release(ticket, output_tokens, cached_tokens(exchange.usage))
        if ticket.placed is not None:  # placed at dispatch but never sent: its place is free again
            self.upstreams.forget(ticket.placed)
        reply = exchange.reply
        if (self.limits is not None and ran and reply is not None and exchange.outcome == "answered" and reply.status < 400
                and ticket.finished_t is not None and ticket.dispatched_t is not None):
            # Time per output token: a queue in the engine shows in it whatever the answers' lengths.
            per_token = (ticket.finished_t - ticket.dispatched_t) / max(1, output_tokens or 1)
            self.limits.latency(reply.index, per_token, self.upstreams.inflight[reply.index])
        if ran and self.recorder is not None:
            row = record_row(ticket, exchange.model, output_tokens, prompt_tokens, self.scheduling.weight(ticket.user),
                             self.settings.estimator.scope, cached_tokens(exchange.usage), exchange.blocks,
                             exchange.policy)
            if exchange.blocks is not None:  # no more blocks than the recorded input_tokens hold (the upstream may count fewer)
                row["prefix_blocks"] = exchange.blocks[:row["input_tokens"] // self.settings.block_tokens]
            if reply is not None:
                row["upstream"] = reply.label
                if reply.held_blocks is not None:
                    row["predicted_cached_tokens"] = reply.held_blocks * self.settings.block_tokens
            self.recorder.add(row)

    def started(self, exchange: Exchange, engine_t: float, upstream: str) -> None:
        self.scheduling.engine_started(exchange.ticket, engine_t, upstream)

    def state(self) -> ProxyState:
        """The §8 snapshot without waiting: a lone proxy's own; a group replica's as last read from the store, with its bound as it is now."""
        return self._with_limits(self.scheduling.current_state())

    def _with_limits(self, state: ProxyState) -> ProxyState:
        if self.limits is not None:
            state["limits"] = self.limits.state()
        if self.upstreams.placement is not None:
            state["placement"] = self.upstreams.placement.state(self.upstreams.labels)
        return state

    @asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        await self.scheduling.start()
        self._probing = asyncio.create_task(self.upstreams.probe())  # off the start's path: serving begins at once
        if self.limits is not None:
            for index in range(len(self.upstreams.labels)):  # the first limits, as events (a group's pool starts from them)
                self._limit_changed(index, self.limits.limit_of(index), START)
            self.limits.start()
        if self.recorder is not None:
            self._recording = asyncio.create_task(self.recorder.run())
        try:
            yield
        finally:
            await self.close()

    async def drain(self) -> None:
        """Shutdown: refuse new requests, cancel the queued ones (uncharged), give the running ones
        the grace period, then fail those still running; finally end the event stream."""
        self.scheduling.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.shutdown_grace_s
        while self.scheduling.inflight and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if self.scheduling.inflight:
            log.warning("shutdown: failing %d request(s) still running after %g s", self.scheduling.inflight, self.settings.shutdown_grace_s)
            for exchange in list(self.live):
                exchange.abort()
            deadline = loop.time() + ABORT_WAIT_S
            while self.scheduling.inflight and loop.time() < deadline:
                await asyncio.sleep(0.02)
        await self.scheduling.leave()
        self.ring.close()

    async def close(self) -> None:
        """Flush the record and close the upstream connections; once."""
        if self._closed:
            return
        self._closed = True
        if self.recorder is not None and self._recording is not None:
            self.recorder.stop()
            await self._recording
            log.info("%s", self.recorder.said())
        if self.limits is not None:
            await self.limits.aclose()
        if self._probing is not None:
            self._probing.cancel()
            await asyncio.gather(self._probing, return_exceptions=True)
        await self.upstreams.aclose()

    def refused(self, conn: HTTPConnection) -> None:
        """A request without a valid API key: counted if it asked for a completion."""
        if conn.scope["path"].endswith(COMPLETION_ROUTES):
            self.metrics.ended(None, "refused")

    async def completion(self, path: str, request: Request) -> Response:
        user: str = request.user.display_name
        try:
            raw = await request.body()
        except ClientDisconnect:
            return Response(status_code=CLIENT_GONE)
        try:
            body = json.loads(raw)
        except ValueError:
            self.metrics.ended(user, "refused")
            return bad_request("the request body must be JSON")
        if not isinstance(body, dict):
            self.metrics.ended(user, "refused")
            return bad_request("the request body must be a JSON object")
        stream = body.get("stream") is True
        options = body.get("stream_options")
        if not isinstance(options, dict):
            options = {}
        wants_usage = options.get("include_usage") is True
        if stream:
            # Ask for usage always: the actual output feeds the estimator and the record.
            body["stream_options"] = {**options, "include_usage": True}
        model = model_of(body)
        scope = self.settings.estimator.scope
        key = user if scope == "user" else model if scope == "model" else None
        try:
            policy = request_policy(request.headers, body)
            blocks = blocks_of(body, self.settings.block_tokens) if self.recorder is not None or self.upstreams.placement is not None else None
            ticket = await self.scheduling.arrive(user, prompt_tokens(body), output_cap(body), key, policy, blocks or ())
        except Closing:
            self.metrics.ended(user, "refused")
            return shutting_down()
        exchange = Exchange(self, request, ticket, model, keep_usage=wants_usage or not stream)
        exchange.policy = policy
        exchange.blocks = blocks
        self.live.add(exchange)
        return await exchange.run(path, json.dumps(body).encode() if stream else raw, stream)

    async def models(self, _request: Request) -> Response:
        try:
            status, media_type, body = await self.upstreams.fetch("GET", "/v1/models")
        except UpstreamError as failure:
            return error_response(failure.status, failure.message, "upstream_error", failure.code)
        return Response(body, status_code=status, media_type=media_type)

    async def sfq_state(self, _request: Request) -> Response:
        return JSONResponse(self._with_limits(await self.scheduling.state()))

    async def sfq_events(self, request: Request) -> Response:
        last = request.headers.get("last-event-id")
        try:
            after = None if last is None or not last.strip() else int(last)
        except ValueError:
            return bad_request("Last-Event-ID must be an event's seq (an integer)")
        return StreamingResponse(self.ring.subscribe(after, self.settings.keepalive_s), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def prometheus(self, _request: Request) -> Response:
        await self.scheduling.state()  # read now, so that the gauges are the store's of this scrape
        return Response(self.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def _openai_http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, exc.detail, "invalid_request_error", None, dict(exc.headers or {}))


def create_app(proxy: Proxy) -> Starlette:
    """OpenAI's routes behind the API keys, the §8 state and stream behind the events token (if
    any), and the metrics open to all."""
    token = proxy.settings.events_token
    sfq = Mount("/v1/sfq", routes=[Route("/state", proxy.sfq_state, methods=["GET"]), Route("/events", proxy.sfq_events, methods=["GET"])],
                middleware=[] if token is None else [authenticated(EventsToken(token))])
    openai = [Route(path, partial(proxy.completion, f"/v1{path}"), methods=["POST"]) for path in COMPLETION_ROUTES]
    openai.append(Route("/models", proxy.models, methods=["GET"]))
    routes = [sfq, Mount("/v1", routes=openai, middleware=[authenticated(ApiKeys(proxy.settings.keys), proxy.refused)]),
              Route("/metrics", proxy.prometheus, methods=["GET"])]
    return Starlette(routes=routes, lifespan=proxy.lifespan, exception_handlers={HTTPException: _openai_http_error})
