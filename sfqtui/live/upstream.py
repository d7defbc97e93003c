"""The upstream servers: least in flight first, one connection pool, failures as UpstreamError.

An upstream is given by its base URL, with or without the trailing ``/v1`` that
OpenAI clients use; requests keep their path (``/v1/chat/completions``). A refused
connection was never delivered, so it is tried on the next upstream; anything else
that goes wrong is the request's answer. Clients' API keys are never forwarded.
"""

from __future__ import annotations

import logging
from typing import Sequence

import httpx

log = logging.getLogger("sfqtui.live")
KEEP_IDLE_S = 4.0
POOL_CONNECTIONS = 16


class UpstreamError(Exception):
    """A request the upstreams could not answer; ``status`` is what the client gets."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def upstream_error(exc: httpx.HTTPError) -> UpstreamError:
    if isinstance(exc, httpx.TimeoutException):
        return UpstreamError(504, "upstream_timeout", "the upstream server did not answer in time")
    return UpstreamError(502, "upstream_error", f"the connection to the upstream server failed ({type(exc).__name__})")


def base_url(url: str) -> str:
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"--upstream {url!r}: expected an http:// or https:// URL")
    path = parsed.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return str(parsed.copy_with(path=path or "/", query=None, fragment=None)).rstrip("/")


class UpstreamReply:
    """An upstream response being read. Closed exactly once, which also gives back its upstream's and its pool's place."""

    def __init__(self, upstreams: Upstreams, index: int, pool: int, response: httpx.Response) -> None:
        self.response = response
        self._upstreams = upstreams
        self._index = index
        self._pool = pool
        self.closed = False

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._upstreams.inflight[self._index] -= 1
        self._upstreams.pool_load[self._pool] -= 1
        await self.response.aclose()


class Upstreams:
    def __init__(self, urls: Sequence[str], timeout_s: float, slots: int) -> None:
        if not urls:
            raise ValueError("give at least one --upstream URL")
        if not timeout_s > 0:
            raise ValueError("--upstream-timeout must be > 0")
        self.bases = [base_url(u) for u in urls]
        self.inflight = [0] * len(self.bases)
        self._turn = 0
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0), pool=None)
        # Slots bound the concurrency, so the pool adds no limit of its own. Idle connections
        # are dropped before servers drop them (vLLM and uvicorn: after 5 s), so a request is
        # never sent on a connection the upstream is closing.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=KEEP_IDLE_S)
        # httpcore's pool does work quadratic in its connections on every request and every
        # response closed; with a hundred slots that was most of the proxy's time, so the
        # connections are spread over small pools, each request on the least busy one.
        self._pools = [httpx.AsyncClient(timeout=timeout, limits=limits) for _ in range(-(-slots // POOL_CONNECTIONS))]
        self.pool_load = [0] * len(self._pools)

    def _order(self) -> list[int]:
        """Least in flight first; ties in turns, so idle upstreams share the load."""
        n = len(self.bases)
        self._turn = (self._turn + 1) % n
        return sorted(range(n), key=lambda i: (self.inflight[i], (i - self._turn) % n))

    async def open(self, method: str, path: str, body: bytes | None = None, stream: bool = False) -> UpstreamReply:
        """Send a request and return once its status and headers are in; the body is read from the reply."""
        headers = {"content-type": "application/json", "accept": "text/event-stream" if stream else "application/json"}
        pool = min(range(len(self._pools)), key=self.pool_load.__getitem__)
        client = self._pools[pool]
        for index in self._order():
            request = client.build_request(method, self.bases[index] + path, content=body, headers=headers)
            self.inflight[index] += 1
            self.pool_load[pool] += 1
            try:
                response = await client.send(request, stream=True)
            except BaseException as exc:
                self.inflight[index] -= 1
                self.pool_load[pool] -= 1
                if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
                    log.warning("upstream %s refused a connection: %s", self.bases[index], exc)
                    continue
                if isinstance(exc, httpx.HTTPError):
                    raise upstream_error(exc) from exc
                raise
            return UpstreamReply(self, index, pool, response)
        raise UpstreamError(502, "upstream_unreachable", "no upstream server accepted the connection")

    async def fetch(self, method: str, path: str) -> tuple[int, str | None, bytes]:
        """(status, content type, body) of a request that needs no slot, such as the model list."""
        reply = await self.open(method, path)
        try:
            body = await reply.response.aread()
        except httpx.HTTPError as exc:
            raise upstream_error(exc) from exc
        finally:
            await reply.aclose()
        return reply.response.status_code, reply.response.headers.get("content-type"), body

    async def aclose(self) -> None:
        for client in self._pools:
            await client.aclose()
