"""The upstream servers: least in flight first, one aiohttp session, failures as UpstreamError.

An upstream is given by its base URL, with or without the trailing ``/v1`` that
OpenAI clients use; requests keep their path (``/v1/chat/completions``). A connection
that was refused or never opened in time was never delivered, so it is tried on the
next upstream; anything else that goes wrong is the request's answer. Clients' API
keys are never forwarded.

With limits per upstream (``--slots auto``), a request goes to the upstream with the most
room under its limit; a 503 (the engine's queue is full, vLLM's ``--max-num-queued-reqs``)
was not served either: the upstream's limit backs off and the request, keeping its slot, is
sent again after a pause (20 ms, doubling up to 0.5 s, and until an upstream has room under
its limit) to whichever upstream has the most room then, until ``--upstream-timeout`` has
passed; then the client gets that 503 as a 502.

A lone proxy chooses a request's upstream when it dispatches it (``place``: its slot and its
place there are taken at once, so that the dispatch event names the upstream and the next
dispatch sees it taken); the request is then sent there first. A group replica learns of a
dispatch after the store made it, so it chooses when it sends.

A request that fails because its connection was closed under it, before any answer (aiohttp reuses
an idle connection at once, and llama.cpp's llama-server closes its connection after each streamed
answer while its headers say it keeps it), never reached the upstream: it is sent again once, on a
connection of its own.

At start, each upstream is asked once for its model list (``probe``, off the start's path),
so that one that cannot be reached is named in the log before the first request fails.

The proxy talks to its upstreams with aiohttp rather than httpx: its C parser and plain
asyncio streams cost well under half of httpx's CPU per streamed chunk, and httpcore's pool
does work quadratic in its connections at each request's start and end. Measured with
``benchmarks/proxy_bench.py --pin`` (100 streams at once, a chunk every 100 and 50 ms): 143
and 121 µs of the proxy's CPU per chunk with aiohttp, 946 and 823 with one httpx client,
358 and 275 with the requests spread over httpx clients of 8 connections each; the median
first byte came 30 ms, 4.2 s and 1.4 s later than directly (a loaded two-core machine).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence

import aiohttp

from sfqtui.proxy.dispatcher import Placed
from sfqtui.proxy.errors import UpstreamError
from sfqtui.proxy.placement import PrefixPlacement
from sfqtui.proxy.urls import base_url, label_of

log = logging.getLogger("sfqtui.proxy")
KEEP_IDLE_S = 4.0
BUSY = 503  # the engine's queue is full: nothing was served
FIRST_PAUSE_S, LONGEST_PAUSE_S = 0.02, 0.5
PROBE_TIMEOUT_S = 10.0  # the probe at start gives up on an upstream this slow to answer


def upstream_error(exc: BaseException) -> UpstreamError:
    """What the client hears of a failure talking to the upstream (timeouts: 504, the rest: 502)."""
    if isinstance(exc, TimeoutError):
        return UpstreamError(504, "upstream_timeout", "the upstream server did not answer in time")
    return UpstreamError(502, "upstream_error", f"the connection to the upstream server failed ({type(exc).__name__})")


# What aiohttp raises when a request went wrong: its own errors and timeouts.
FAILURES = (aiohttp.ClientError, TimeoutError)


def upstream_session(timeout: aiohttp.ClientTimeout, fresh: bool = False) -> aiohttp.ClientSession:
    """A session for the upstreams (requests and /metrics alike). Slots bound the concurrency, so
    the pool adds no limit of its own. Idle connections are dropped before servers drop them
    (vLLM and uvicorn: after 5 s), so a request is never sent on a connection the upstream is
    closing for idleness; ``fresh``: a connection for each request, closed after it. No cookies:
    the upstreams are APIs, and a jar would carry one client's cookies to the next."""
    connector = aiohttp.TCPConnector(limit=0, force_close=True) if fresh else aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEP_IDLE_S)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar())


def closed_under_it(exc: BaseException) -> bool:
    """The connection was closed or reset before any answer (not refused: a refusal goes to the next upstream)."""
    return isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)) and not isinstance(exc, aiohttp.ClientConnectorError)


class UpstreamWatch:
    """What the proxy's metrics hear from the upstreams: first-byte times and failures, by upstream label."""

    def __init__(self, answered: Callable[[str, float], None], failed: Callable[[str, str], None]) -> None:
        self.answered = answered
        self.failed = failed


class UpstreamReply:
    """An upstream response being read. Closed exactly once, which also gives back its upstream's place."""

    def __init__(self, upstreams: Upstreams, index: int, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self._upstreams = upstreams
        self.index = index
        self.closed = False
        self.held_blocks: int | None = None  # --placement prefix: the blocks of its prompt the index said its upstream held

    @property
    def status(self) -> int:
        return self.response.status

    @property
    def label(self) -> str:
        """Its upstream, as the metrics name it."""
        return self._upstreams.labels[self.index]

    @property
    def content_type(self) -> str | None:
        return self.response.headers.get("content-type")

    @property
    def is_event_stream(self) -> bool:
        return self.response.content_type == "text/event-stream"

    def failed(self, code: str) -> None:
        """The answer broke off (timeout, connection) after it had begun."""
        self._upstreams.watch.failed(self._upstreams.labels[self.index], code)

    def interrupt(self, exc: Exception) -> None:
        """Make the read waiting on this response (if any) raise ``exc`` now."""
        self.response.content.set_exception(exc)

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._upstreams.inflight[self.index] -= 1
        if self.response.content.at_eof():
            self.response.release()
        else:
            # Read only in part: drop the connection, which is how the upstream learns to stop.
            self.response.close()


class Upstreams:
    def __init__(self, urls: Sequence[str], timeout_s: float, watch: UpstreamWatch | None = None) -> None:
        """Without limits, least in flight first; ``limit_of`` (an upstream's limit, by index) and
        ``busy`` (told an upstream's index when it answers 503) are set for ``--slots auto``."""
        self.bases = [base_url(u) for u in urls]
        self.labels = [label_of(b) for b in self.bases]
        self.watch = watch or UpstreamWatch(lambda _u, _s: None, lambda _u, _c: None)
        self.inflight = [0] * len(self.bases)
        self.sent = [0] * len(self.bases)  # requests sent to each so far (what a metrics reading held throughout: limits.py)
        self.limit_of: Callable[[int], int] | None = None
        self.busy: Callable[[int], None] | None = None
        self.placement: PrefixPlacement | None = None  # --placement prefix (None: room)
        self._timeout_s = timeout_s
        self._turn = 0
        connect = min(timeout_s, 10.0)  # name lookup and connection together, then the connection alone
        self._timeout = aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None  # for a request sent again: a connection of its own

    def _client(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the event loop that is running then.
        if self._session is None:
            self._session = upstream_session(self._timeout)
        return self._session

    async def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> aiohttp.ClientResponse:
        """The upstream's response; once more on a new connection when the pooled one was closed under the request."""
        # A redirect is not followed: it would turn a POST into a GET, or send the prompt elsewhere.
        try:
            return await self._client().request(method, url, data=body, headers=headers, allow_redirects=False)
        except FAILURES as exc:
            if not closed_under_it(exc):
                raise
        if self._fresh is None:
            self._fresh = upstream_session(self._timeout, fresh=True)
        return await self._fresh.request(method, url, data=body, headers=headers, allow_redirects=False)

    def _order(self, next_turn: bool = True) -> list[int]:
        """Least in flight first (with limits: the most room under its limit); ties in turns, so
        idle upstreams share the load (``next_turn``: a new request's order, the next turn's)."""
        n = len(self.bases)
        if next_turn:
            self._turn = (self._turn + 1) % n
        limit_of = self.limit_of
        if limit_of is None:
            return sorted(range(n), key=lambda i: (self.inflight[i], (i - self._turn) % n))
        return sorted(range(n), key=lambda i: (self.inflight[i] - limit_of(i), (i - self._turn) % n))

    def _ordered(self, blocks: Sequence[int]) -> list[int]:
        """The upstreams to try, first choice first: by room, or by placement."""
        order = self._order()
        return order if self.placement is None else self.placement.order(order, blocks)

    def place(self, blocks: Sequence[int]) -> Placed:
        """Choose the upstream of a request being dispatched (``blocks``: its prompt's, for a
        placement) and hold its place there, so that the next dispatch sees it taken; ``open``
        sends the request there first, and ``forget`` gives the place back if it never does."""
        index = self._ordered(blocks)[0]
        self.inflight[index] += 1
        return Placed(index, None if self.placement is None else self.placement.sent(index, blocks))

    def forget(self, placed: Placed) -> None:
        """A placed request ended before it was sent: its place is free again."""
        if not placed.taken:
            placed.taken = True
            self.inflight[placed.index] -= 1

    async def open(self, method: str, path: str, body: bytes | None = None, stream: bool = False,
                   blocks: Sequence[int] = (), placed: Placed | None = None) -> UpstreamReply:
        """Send a request and return once its status and headers are in; the body is read from the reply.
        With ``busy`` set, a 503 is sent again after a pause (the module's docstring); ``placed``:
        where ``place`` put it at dispatch, tried first; otherwise, with a placement, ``blocks``
        (the prompt's) choose the upstream (``sfqtui.proxy.placement``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        pause = FIRST_PAUSE_S
        while True:
            reply = await self._open_once(method, path, body, stream, blocks, placed)
            if reply.status != BUSY or self.busy is None or loop.time() + pause > deadline:
                return reply
            self.busy(reply.index)
            try:
                await reply.response.read()  # a few bytes: the connection stays open for the next request
            except FAILURES:
                pass
            await reply.aclose()
            await asyncio.sleep(pause)
            while not self._room() and loop.time() + pause <= deadline:
                await asyncio.sleep(pause)  # rare (a 503 just cut a limit), and never on a request's path otherwise
            pause = min(2 * pause, LONGEST_PAUSE_S)

    def _room(self) -> bool:
        """Some upstream has fewer requests in flight than its limit."""
        limit_of = self.limit_of
        return limit_of is None or any(self.inflight[i] < limit_of(i) for i in range(len(self.bases)))

    async def _open_once(self, method: str, path: str, body: bytes | None, stream: bool, blocks: Sequence[int],
                         placed: Placed | None) -> UpstreamReply:
        headers = {"content-type": "application/json", "accept": "text/event-stream" if stream else "application/json"}
        placement = self.placement
        held = placed is not None and not placed.taken  # its place is held: the first try goes there, counted already
        if placed is not None and held:
            placed.taken = True
            order = [placed.index, *(i for i in self._order(next_turn=False) if i != placed.index)]
        else:
            order = self._ordered(blocks)
        for position, index in enumerate(order):
            if not (held and position == 0):
                self.inflight[index] += 1
            self.sent[index] += 1
            sent = time.perf_counter()
            try:
                response = await self._send(method, self.bases[index] + path, body, headers)
            except BaseException as exc:
                self.inflight[index] -= 1
                if isinstance(exc, (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)):
                    log.warning("upstream %s refused a connection: %s", self.bases[index], exc)
                    self.watch.failed(self.labels[index], "refused")
                    continue
                if isinstance(exc, FAILURES):
                    failure = upstream_error(exc)
                    self.watch.failed(self.labels[index], failure.code)
                    raise failure from exc
                raise
            self.watch.answered(self.labels[index], time.perf_counter() - sent)
            if response.status == BUSY and self.busy is not None:
                self.watch.failed(self.labels[index], "busy")
            elif response.status >= 500:
                self.watch.failed(self.labels[index], f"http_{response.status}")
            reply = UpstreamReply(self, index, response)
            if placed is not None and index == placed.index:
                reply.held_blocks = placed.held
            elif placement is not None:
                reply.held_blocks = placement.sent(index, blocks)
            return reply
        raise UpstreamError(502, "upstream_unreachable", "no upstream server accepted the connection")

    async def fetch(self, method: str, path: str) -> tuple[int, str | None, bytes]:
        """(status, content type, body) of a request that needs no slot, such as the model list."""
        reply = await self.open(method, path)
        try:
            body = await reply.response.read()
        except FAILURES as exc:
            raise upstream_error(exc) from exc
        finally:
            await reply.aclose()
        return reply.status, reply.content_type, body

    async def probe(self) -> None:
        """Ask each upstream for its model list once, and log one line for each that cannot be
        reached, or that answers 404 there (not its base URL); any other answer is fine."""
        session = self._client()
        timeout = aiohttp.ClientTimeout(total=min(PROBE_TIMEOUT_S, self._timeout_s))

        async def reach(base: str) -> None:
            try:
                async with session.get(f"{base}/v1/models", timeout=timeout, allow_redirects=False) as response:
                    status = response.status
            except FAILURES as exc:
                if isinstance(exc, aiohttp.ClientConnectorError):  # "Connection refused", "Name or service not known", ...
                    error = exc.os_error
                    why = os.strerror(error.errno) if error.errno and error.errno > 0 else error.strerror or str(error)
                else:
                    why = f"no answer in {timeout.total:g} s" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
                log.warning("upstream %s cannot be reached (%s): a request it refuses goes to the next upstream, or gets a 502", base, why)
                return
            if status == 404:
                log.warning("upstream %s answers 404 for /v1/models: is that the server's base URL?", base)

        await asyncio.gather(*(reach(base) for base in self.bases))

    async def aclose(self) -> None:
        for session in (self._session, self._fresh):
            if session is not None:
                await session.close()
