"""The routers of semantics §11: which replica a request goes to, decided at its arrival.

A request stays on the replica it was routed to. ``hash``, ``random`` and
``round-robin`` depend only on the request (its user, its id, its place in arrival
order), so a whole chunk of requests is routed at once; ``least-loaded`` depends on the
replicas' loads at the moment, so the engine asks it at each arrival.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from array import array
from collections.abc import Sequence

from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.core.requests.trace import Trace


class StaticRouter(ABC):
    """A router that depends only on the requests: ``assign`` routes consecutive requests,
    the first being arrival number ``start``."""

    def __init__(self, count: int) -> None:
        self.count = count

    @abstractmethod
    def assign(self, trace: Trace, start: int) -> Sequence[int]: ...


class HashRouter(StaticRouter):
    """k = crc32(user as UTF-8) mod K: every request of a user on one replica."""

    def __init__(self, count: int, users: Sequence[str]) -> None:
        super().__init__(count)
        self._by_code = array("i", (zlib.crc32(name.encode()) % count for name in users))

    def assign(self, trace: Trace, start: int) -> Sequence[int]:
        by_code = self._by_code
        return array("i", (by_code[u] for u in trace.user))


class RandomRouter(StaticRouter):
    """k = crc32(f"{seed}:{request_id}" as UTF-8) mod K: independent of arrival order and timing."""

    def __init__(self, count: int, seed: int) -> None:
        super().__init__(count)
        self._prefix = f"{seed}:"

    def assign(self, trace: Trace, start: int) -> Sequence[int]:
        prefix, count, crc32 = self._prefix, self.count, zlib.crc32
        return array("i", (crc32(f"{prefix}{rid}".encode()) % count for rid in trace.request_id))


class RoundRobinRouter(StaticRouter):
    """The n-th arrival (from 0) goes to n mod K."""

    def assign(self, trace: Trace, start: int) -> Sequence[int]:
        count = self.count
        return array("i", ((start + j) % count for j in range(len(trace))))


class LeastLoadedRouter:
    """The replica with the fewest requests queued or in flight, ties to the lowest k."""

    def __init__(self, count: int) -> None:
        self.count = count

    def pick(self, load: Sequence[int]) -> int:
        return min(range(self.count), key=load.__getitem__)


def router_for(settings: ReplicaSettings, users: Sequence[str]) -> StaticRouter | LeastLoadedRouter:
    """The router the settings name; ``users`` are the trace's users by code."""
    name, count = settings.router, settings.count
    if name == "hash":
        return HashRouter(count, users)
    if name == "random":
        return RandomRouter(count, settings.seed)
    if name == "round-robin":
        return RoundRobinRouter(count)
    return LeastLoadedRouter(count)
