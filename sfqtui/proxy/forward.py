"""One proxied completion request, from its arrival in its user's queue to its last byte.

Whatever happens (answer, upstream failure, client gone, shutdown), the request ends
exactly once: its upstream response is closed once, its slot is freed once (or, if it
never left the queue, it is cancelled uncharged), and a dispatched request is recorded
once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, Protocol, TypeVar

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from sfqtui.protocol import ENGINE_START_HEADER
from sfqtui.proxy.attributes import NO_POLICY
from sfqtui.proxy.dispatcher import Placed, Stage, Ticket
from sfqtui.proxy.errors import Aborted, ClientGone, EventTooLong, Interrupted, UpstreamError
from sfqtui.proxy.openai_errors import SHUTTING_DOWN, error_frame, error_response, shutting_down
from sfqtui.proxy.sse import EMPTY_LINES, WholeEvents, data_of, events_of
from sfqtui.proxy.upstream import FAILURES, UpstreamReply, upstream_error

T = TypeVar("T")
# An event that may carry usage; a match inside a string value is impossible (its quotes
# would be escaped), so only these events need parsing.
USAGE_OBJECT = re.compile(rb'"usage"\s*:\s*\{')
# Nobody reads the answer to a client that left; nginx's code says so in the access log.
CLIENT_GONE = 499


async def _until_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _usage_of(body: bytes) -> dict[str, Any] | None:
    try:
        usage = json.loads(body).get("usage")
    except (ValueError, AttributeError):
        return None
    return usage if isinstance(usage, dict) else None


def _tokens(usage: dict[str, Any] | None, name: str) -> int | None:
    value = None if usage is None else usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def cached_tokens(usage: dict[str, Any] | None) -> int | None:
    """The prompt tokens the upstream's prefix cache held, when its usage says (OpenAI's
    ``prompt_tokens_details.cached_tokens``; vLLM and the emulated engine fill it)."""
    details = None if usage is None else usage.get("prompt_tokens_details")
    return _tokens(details, "cached_tokens") if isinstance(details, dict) else None


def _engine_start(reply: UpstreamReply) -> float | None:
    """When the upstream's engine says the request began running (Unix seconds), if it says."""
    try:
        started = float(reply.response.headers.get(ENGINE_START_HEADER, "nan"))
    except ValueError:
        return None
    return started if math.isfinite(started) else None


def _upstream_status_error(status: int, body: bytes) -> UpstreamError:
    """A 5xx from upstream, as a 502 carrying the upstream's own message when it sent one in OpenAI's format."""
    message = f"the upstream server answered HTTP {status}"
    try:
        inner = json.loads(body)["error"]["message"]
        if isinstance(inner, str) and inner:
            message = f"{message}: {inner}"
    except (ValueError, KeyError, TypeError):
        pass
    return UpstreamError(502, f"upstream_http_{status}", message)


class Host(Protocol):
    """What an exchange needs from the proxy that holds it: an upstream, and someone to tell when it is over."""

    async def open_upstream(self, path: str, payload: bytes, stream: bool, blocks: Sequence[int] = (), placed: Placed | None = None) -> UpstreamReply:
        """Send the request upstream (``blocks``, the prompt's, for ``--placement prefix``; ``placed``:
        where it was placed at dispatch, tried first)."""
        ...

    def ended(self, exchange: Exchange, output_tokens: int | None, prompt_tokens: int | None) -> None:
        """The request is over: free its slot (or cancel it, if still queued) and record it. Called once."""

    def started(self, exchange: Exchange, engine_t: float, upstream: str) -> None:
        """The upstream's engine reported when the request began running (Unix seconds)."""


class Exchange:
    def __init__(self, host: Host, request: Request, ticket: Ticket, model: str | None, keep_usage: bool) -> None:
        self.host = host
        self.request = request
        self.ticket = ticket
        self.model = model
        self.keep_usage = keep_usage
        self.reply: UpstreamReply | None = None
        self.usage: dict[str, Any] | None = None
        self.blocks: list[int] | None = None  # the prompt's chained block hashes, when the proxy names them (--record, --placement prefix)
        self.policy = NO_POLICY  # what the request said of itself (semantics §15), for the record
        self._interruption: type[Interrupted] | None = None
        self._timeout: asyncio.Timeout | None = None
        self._streaming = False
        self._watcher: asyncio.Future[None] | None = None
        self._ended = False
        self.outcome = "answered"  # or failed, cancelled (the metrics' outcomes)

    def abort(self) -> None:
        """Interrupt whatever this request is waiting for (shutdown's grace is over)."""
        self._interrupt(Aborted)

    def _interrupt(self, reason: type[Interrupted]) -> None:
        if self._interruption is not None:
            return
        self._interruption = reason
        if self._timeout is not None:
            self._timeout.reschedule(asyncio.get_running_loop().time())
        elif self._streaming and self.reply is not None:
            self.reply.interrupt(reason())

    def _client_left(self, watcher: asyncio.Future[None]) -> None:
        if not watcher.cancelled() and watcher.exception() is None:
            self._interrupt(ClientGone)

    def _stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.remove_done_callback(self._client_left)
            self._watcher.cancel()
            self._watcher = None

    async def _interruptible(self, awaitable: Awaitable[T]) -> T:
        """The awaitable's result, unless the client leaves (ClientGone) or shutdown gives up
        on the request (Aborted) first. It runs in this task: no task of its own to schedule."""
        if self._interruption is not None:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise self._interruption()
        try:
            async with asyncio.timeout(None) as self._timeout:
                return await awaitable
        except TimeoutError:
            if self._interruption is not None:
                raise self._interruption() from None
            raise
        finally:
            self._timeout = None

    async def run(self, path: str, payload: bytes, stream: bool) -> Response:
        """Wait for a slot, send upstream, and answer; a stream is handed to the response, which ends the request."""
        # A client that leaves interrupts whatever the request waits for, until the request ends.
        self._watcher = asyncio.ensure_future(_until_disconnect(self.request))
        self._watcher.add_done_callback(self._client_left)
        try:
            if not self.ticket.settled.done():
                await self._interruptible(asyncio.shield(self.ticket.settled))
            if self.ticket.stage is Stage.CANCELLED:
                self.outcome = "cancelled"
                return shutting_down()
            await self._interruptible(self._open(path, payload, stream))
            assert self.reply is not None
            reply = self.reply
            if reply.status < 300 and (started := _engine_start(reply)) is not None:
                self.host.started(self, started, reply.label)
            if not reply.is_event_stream or reply.status >= 400:
                body = await self._interruptible(reply.response.read())
                if reply.status >= 500:
                    raise _upstream_status_error(reply.status, body)
                if reply.status < 300:
                    self.usage = _usage_of(body)
                return Response(body, status_code=reply.status, media_type=reply.content_type)
            self._streaming = True
            return RelayedStream(self)
        except ClientGone:
            self.outcome = "cancelled"
            return Response(status_code=CLIENT_GONE)
        except Aborted:
            self.outcome = "cancelled"
            return shutting_down()
        except FAILURES as exc:
            self.outcome = "failed"
            failure = upstream_error(exc)
            if self.reply is not None:
                self.reply.failed(failure.code)
            return error_response(failure.status, failure.message, "upstream_error", failure.code)
        except UpstreamError as failure:
            self.outcome = "failed"
            return error_response(failure.status, failure.message, "upstream_error", failure.code)
        finally:
            if not self._streaming:
                await self.end()

    async def _open(self, path: str, payload: bytes, stream: bool) -> None:
        # Kept as soon as it exists, so that end() closes it whatever interrupts run() next.
        self.reply = await self.host.open_upstream(path, payload, stream, self.blocks or (), self.ticket.placed)

    def _relayed(self, block: bytes) -> bytes:
        """Whole upstream events as the client gets them: as they came, but the usage chunk
        only if the client asked for it."""
        if USAGE_OBJECT.search(block) is None:
            return block
        return b"".join(self._event_relayed(event) for event in events_of(block))

    def _event_relayed(self, event: list[bytes]) -> bytes:
        raw = b"".join(event)
        if USAGE_OBJECT.search(raw) is None:
            return raw
        try:
            chunk = json.loads(data_of(event))
        except ValueError:
            return raw
        if not isinstance(chunk, dict) or not isinstance(chunk.get("usage"), dict):
            return raw
        self.usage = chunk["usage"]
        if self.keep_usage:
            return raw
        if not chunk.get("choices"):
            return b""
        del chunk["usage"]
        fields = [line for line in event if not line.startswith(b"data:") and line not in EMPTY_LINES]
        return b"".join(fields) + b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    async def relay(self) -> AsyncIterator[bytes]:
        """The upstream's stream as it arrives, cut at event ends; a failure after the 200 went
        out becomes an error event."""
        assert self.reply is not None
        if self._interruption is not None:
            # It came after the last wait before the stream and before the stream began.
            self.reply.interrupt(self._interruption())
        whole = WholeEvents()
        try:
            async for data in self.reply.response.content.iter_any():
                out = self._relayed(whole.feed(data))
                if out:
                    yield out
            out = self._relayed(whole.rest())
            if out:
                yield out
        except ClientGone:
            self.outcome = "cancelled"
        except Aborted:
            self.outcome = "cancelled"
            yield error_frame(*SHUTTING_DOWN)
        except EventTooLong as exc:
            self.outcome = "failed"
            self.reply.failed("upstream_event_too_long")
            yield error_frame(f"the upstream server sent {exc}", "upstream_error", "upstream_event_too_long")
        except FAILURES as exc:
            self.outcome = "failed"
            failure = upstream_error(exc)
            self.reply.failed(failure.code)
            yield error_frame(failure.message, "upstream_error", failure.code)

    async def end(self) -> None:
        """Tell the host (which frees the slot, or cancels if still queued, and records), close the
        upstream response; only the first call acts."""
        if self._ended:
            return
        self._ended = True
        self._stop_watching()
        self.host.ended(self, _tokens(self.usage, "completion_tokens"), _tokens(self.usage, "prompt_tokens"))
        if self.reply is not None:
            await self.reply.aclose()


class RelayedStream(StreamingResponse):
    """The streamed answer; when it is over (done, failed, or the client went away) the request ends.

    The exchange watches for the client leaving, so this sends without Starlette's own
    watcher (a task group per stream)."""

    def __init__(self, exchange: Exchange) -> None:
        super().__init__(exchange.relay(), media_type="text/event-stream", headers={"cache-control": "no-cache"})
        self._exchange = exchange

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            # The relay may be suspended where the client left; closing it runs its own cleanup first.
            await self.body_iterator.aclose()  # type: ignore[attr-defined]  # starlette says AsyncIterable; ours is the relay's async generator
            await self._exchange.end()
