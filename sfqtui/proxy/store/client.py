"""``Store``: the group's scripts on Redis (or Valkey) through redis-py's asyncio client."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisError, ResponseError

PREFIX = "sfqtui:"
SCRIPTS = ("batch", "renew", "join", "leave", "state")
# Errors that mean the store is away (unreachable, paused, restarting), not that a script is wrong.
AWAY = (ConnectionError, TimeoutError, OSError)


class StoreAway(Exception):
    """The store did not answer (in time)."""


def script_text(name: str) -> str:
    """A script as loaded: lib.lua, members.lua unless it is the per-request batch.lua, then the script."""
    scripts = files("sfqtui.proxy.store") / "scripts"
    parts = ["lib", name] if name == "batch" else ["lib", "members", name]
    return "\n".join((scripts / f"{part}.lua").read_text() for part in parts)


class Store:
    """The scripts, loaded once per server (again after NOSCRIPT), each run in one round trip.

    A call is never retried: a script that timed out may still have run, and every script
    is written so that the replica's next call settles that. ``on_call`` is told each
    answered call's round trip."""

    def __init__(self, url: str, timeout_s: float, on_call: Callable[[float], None]) -> None:
        self.url = url
        self.timeout_s = timeout_s
        # No retries: a retried script could run twice.
        options: dict[str, Any] = {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s,
                                   "retry": Retry(NoBackoff(), 0), "retry_on_timeout": False}
        self.redis = aioredis.from_url(url, **options)
        self._texts = {name: script_text(name) for name in SCRIPTS}
        self._sha: dict[str, str] = {}
        self._on_call = on_call

    def reader(self, block_s: float) -> aioredis.Redis:
        """A connection of its own for blocking reads of the event stream."""
        return aioredis.from_url(self.url, socket_timeout=block_s + self.timeout_s, socket_connect_timeout=self.timeout_s,
                                 retry=Retry(NoBackoff(), 0), retry_on_timeout=False)

    async def call(self, name: str, *args: str | int | float | bytes) -> Any:
        started = time.perf_counter()
        try:
            sha = self._sha.get(name)
            if sha is None:
                sha = self._sha[name] = await self.redis.script_load(self._texts[name])
            try:
                reply = await self.redis.evalsha(sha, 1, PREFIX, *args)
            except NoScriptError:  # the server restarted, or its script cache was flushed
                self._sha[name] = await self.redis.script_load(self._texts[name])
                reply = await self.redis.evalsha(self._sha[name], 1, PREFIX, *args)
        except ResponseError:
            raise
        except (RedisError, *AWAY) as exc:
            raise StoreAway(f"{type(exc).__name__}: {exc}") from exc
        self._on_call(time.perf_counter() - started)
        return reply

    async def aclose(self) -> None:
        await self.redis.aclose()
