"""An upstream that closes its connection after each streamed answer while its headers say it keeps it
(llama.cpp's llama-server does): the next request, sent at once on that connection, still gets its answer."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import httpx

from tests.proxy_fixtures import KEY_OF, TLS, running_proxy

CLOSE_AFTER_S = 0.5  # llama-server closes a moment after the stream's end; long enough here for the proxy to send the next request
EVENTS = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n"
          + f"{len(EVENTS):x}\r\n".encode() + EVENTS + b"\r\n0\r\n\r\n")


class ClosingAfterEachStream:
    """On loopback: reads one request on each connection, streams the answer, and closes the connection a moment later."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(ANSWER)
            time.sleep(CLOSE_AFTER_S)

    def close(self) -> None:
        self._listener.close()


async def test_a_request_sent_on_a_connection_the_upstream_then_closed_is_sent_again(keys_path: Path) -> None:
    upstream = ClosingAfterEachStream()
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4, "stream": True}
    try:
        with running_proxy(upstream.url, keys_path, slots=1) as px:
            async with httpx.AsyncClient(verify=TLS, timeout=30, headers={"authorization": f"Bearer {KEY_OF['alice']}"}) as client:
                # One slot: the second is sent the moment the first's stream ends, on the connection the first used.
                answers = await asyncio.gather(*(client.post(f"{px.url}/v1/chat/completions", json=body) for _ in range(2)))
    finally:
        upstream.close()
    assert [a.status_code for a in answers] == [200, 200], answers[-1].text
    assert all("data: [DONE]" in a.text for a in answers)
