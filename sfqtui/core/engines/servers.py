"""The engine model as a replay's servers (``sfqtui.core.replay.servers.Servers``): a dispatched
request goes to an engine's queue and completes when that engine has run it (``pool``), and
under ``--slots auto`` the slots follow the engines' limits (``limits``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sfqtui.core.engines.limits import EngineLimits
from sfqtui.core.engines.pool import EnginePool, request_tokens
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.requests.trace import Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers.base import User


class EngineServers:
    """The engines behind the balancer, with each held chunk's prompt and output tokens (None: retired)."""

    def __init__(self, settings: EngineSettings, window: RequestWindow) -> None:
        self.model = settings.model
        self.window = window
        self.pool = EnginePool(settings)
        self.capacity: EngineLimits | None = EngineLimits(settings.auto, self.pool) if settings.auto is not None else None
        self.tokens: list[tuple[list[int], list[int]] | None] = []

    def entering(self, trace: Trace) -> Sequence[float]:
        """The engines time each request: they keep the chunk's tokens, the window no service times."""
        self.tokens.append(request_tokens(trace, self.model))
        return ()

    def retired(self, chunks: range) -> None:
        for k in chunks:
            self.tokens[k] = None

    @property
    def next_done(self) -> float:
        return self.pool.next_t

    def send(self, now: float, req: int, user: User, pool: int, rep: int) -> int:
        size = self.window.size
        prompts, outputs = self.tokens[req // size]  # type: ignore[misc]  # the chunk of a request just dispatched is not retired
        r = req % size
        return self.pool.send(now, (req, user, pool, rep, prompts[r], outputs[r]))

    def finish(self, now: float) -> list[tuple[int, int, User, int, int]]:
        return self.pool.finish(now)

    def settle(self, now: float) -> list[tuple[int, int, User, int]]:
        return self.pool.settle(now)

    def unfinished(self) -> Iterator[int]:
        return self.pool.unfinished()
