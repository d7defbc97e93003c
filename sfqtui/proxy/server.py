"""The proxy under uvicorn, with a shutdown that ends requests and streams explicitly.

uvicorn's own shutdown stops listening and then waits for open connections to finish,
and only then runs the application's lifespan shutdown. Queued requests, requests
running upstream and followers of the event stream would keep it waiting (an event
stream forever), so ``ProxyServer.shutdown`` first drains the proxy alongside it:
queued requests get a 503, running ones get the grace period and then an error, event
streams end once the last event is out; the lifespan then flushes the record.
"""

from __future__ import annotations

import asyncio
import socket

import uvicorn

from sfqtui.errors import InputError
from sfqtui.proxy.app import Proxy, create_app
from sfqtui.proxy.settings import ProxySettings

# uvicorn cancels what is still running this long after the grace period (a backstop; drain ends everything before).
BACKSTOP_S = 10.0
# Longer than clients keep idle connections (httpx and the openai client: 5 s), so a client
# never sends a request on a connection the proxy is closing at the same moment.
KEEP_ALIVE_S = 75


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket (port 0: any free port), or InputError saying why not."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)[0]
        # proto must be IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on such
        # sockets, and with Nagle on each streamed chunk waits ~40 ms for the client's delayed ACK.
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class ProxyServer(uvicorn.Server):
    def __init__(self, settings: ProxySettings) -> None:
        self.proxy = Proxy(settings)
        config = uvicorn.Config(
            create_app(self.proxy),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=settings.shutdown_grace_s + BACKSTOP_S,  # type: ignore[arg-type]  # uvicorn says int; asyncio.wait_for takes a float
        )
        super().__init__(config)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        draining = asyncio.create_task(self.proxy.drain())
        try:
            await super().shutdown(sockets)
        finally:
            if not draining.done():
                # A second Ctrl-C skips uvicorn's wait and the lifespan: still flush the record.
                draining.cancel()
            await self.proxy.close()
