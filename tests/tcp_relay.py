"""A loopback TCP relay the tests can cut (drop every connection through it, and refuse new ones for a
while), slow down (every piece of data waits ``delay_s`` before it is passed on), or freeze (go silent)."""

from __future__ import annotations

import socket
import threading
import time


class TcpRelay:
    def __init__(self, target_port: int, delay_s: float = 0.0) -> None:
        self._target = ("127.0.0.1", target_port)
        self.delay_s = delay_s
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.refusing = False
        self.frozen = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self._target)
            except OSError:  # nothing listens behind the relay: the client is turned away
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if self.delay_s:
                    time.sleep(self.delay_s)
                if not self.frozen:
                    dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self, refuse: bool = False) -> None:
        """Drop every open connection; with ``refuse``, also close new ones at once until ``accept_again``."""
        self.refusing = refuse
        with self._lock:
            open_now, self._open = self._open, []
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def freeze(self) -> None:
        """Stop passing bytes on, connections left open: what a half-open connection looks like to both ends."""
        self.frozen = True

    def accept_again(self) -> None:
        self.refusing = False

    def close(self) -> None:
        self._listener.close()
        self.cut()
