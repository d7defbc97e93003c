"""``Store``: the group's scripts on Redis or Valkey through redis-py's asyncio client.

On a server with Functions (Redis 7 and later, Valkey) the scripts are one library, loaded once
and run with FCALL; on Redis 6.2 each is a cached script (redis-py's ``Script``: EVALSHA, loaded
again on NOSCRIPT). Both run the same Lua (``library.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoPermissionError, RedisError, ResponseError

from sfqtui.proxy.errors import StoreAway
from sfqtui.proxy.store import library, replies
from sfqtui.proxy.store.keys import SCRIPT_KEYS
from sfqtui.proxy.store.replies import Answered, Joined, OtherSettings, Refused, Renewed, Snapshot, Value

Arg = str | int | float | bytes
# Errors that mean the store is away (unreachable, paused, restarting), not that a script is wrong.
AWAY = (ConnectionError, TimeoutError, OSError)


class Store:
    """The scripts, each call one round trip (two when the server lost them: they are loaded again).

    A call is never retried once a script ran or may have run: a script that timed out may still
    have run, and every script is written so that the replica's next call settles that.
    ``on_call`` is told each answered call's round trip."""

    def __init__(self, url: str, timeout_s: float, on_call: Callable[[float], None]) -> None:
        self.url = url
        self.timeout_s = timeout_s
        # No retries: a retried script could run twice.
        self.redis = aioredis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0),
                                       retry_on_timeout=False)
        self._cached = {name: self.redis.register_script(library.script(name)) for name in library.SCRIPTS}
        self.functions: bool | None = None  # whether the server runs the library; None until the first call
        self._on_call = on_call

    def reader(self, block_s: float) -> aioredis.Redis:
        """A connection of its own for blocking reads of the event stream."""
        return aioredis.from_url(self.url, socket_timeout=block_s + self.timeout_s, socket_connect_timeout=self.timeout_s,
                                 retry=Retry(NoBackoff(), 0), retry_on_timeout=False)

    async def join(self, *args: Arg) -> Joined | OtherSettings:
        """join.lua (its header lists the arguments)."""
        return replies.joined(await self._call("join", *args))

    async def batch(self, run: str, replica: str, *operations: Arg) -> Answered | Refused:
        return replies.answered(await self._call("batch", run, replica, *operations))

    async def renew(self, run: str, replica: str, lease_s: float) -> Renewed | Refused:
        return replies.renewed(await self._call("renew", run, replica, lease_s))

    async def leave(self, run: str, replica: str) -> None:
        await self._call("leave", run, replica)

    async def state(self) -> Snapshot | None:
        """The §8 snapshot, None if the store has no run."""
        return replies.snapshot(await self._call("state"))

    async def _call(self, name: str, *args: Arg) -> Value:
        started = time.perf_counter()
        try:
            if self.functions is None:
                self.functions = await self._load_library()
            if self.functions:
                reply = await self._fcall(name, args)
            else:
                reply = await self._cached[name](keys=SCRIPT_KEYS, args=args)
        except ResponseError:
            raise
        except (RedisError, *AWAY) as exc:
            raise StoreAway(f"{type(exc).__name__}: {exc}") from exc
        self._on_call(time.perf_counter() - started)
        return replies.decoded(reply)

    async def _load_library(self) -> bool:
        """Load the library unless the server has it; False if the server has no Functions (Redis
        6.2) or this user may not load them: the cached scripts run instead."""
        try:
            await self.redis.function_load(library.library())
        except NoPermissionError:
            return False
        except ResponseError as exc:
            if "already exists" in str(exc):
                return True
            if "unknown command" in str(exc).lower():
                return False
            raise
        return True

    async def _fcall(self, name: str, args: tuple[Arg, ...]) -> object:
        function = library.function_name(name)
        try:
            return await self.redis.fcall(function, len(SCRIPT_KEYS), *SCRIPT_KEYS, *args)
        except ResponseError as exc:
            if "function not found" not in str(exc).lower():
                raise
        await self._load_library()  # the server restarted empty, or its functions were flushed: nothing ran
        return await self.redis.fcall(function, len(SCRIPT_KEYS), *SCRIPT_KEYS, *args)

    async def aclose(self) -> None:
        await self.redis.aclose()
