"""The engine model as a replay's servers (``sfqtui.core.replay.servers.Servers``): a dispatched
request goes to an engine's queue and completes when that engine has run it (``pool``, which the
loop calls directly), and under ``--slots auto`` the slots follow the engines' limits (``limits``)."""

from __future__ import annotations

from sfqtui.core.engines.limits import EngineLimits
from sfqtui.core.engines.pool import EnginePool
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.requests.window import RequestWindow


class EngineServers(EnginePool):
    """The engines behind the balancer, with their limits under ``--slots auto`` (None: fixed slots)."""

    def __init__(self, settings: EngineSettings, window: RequestWindow) -> None:
        super().__init__(settings, window)
        self.capacity: EngineLimits | None = EngineLimits(settings.auto, self) if settings.auto is not None else None
