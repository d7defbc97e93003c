"""The emulated engine under uvicorn."""

from __future__ import annotations

import uvicorn

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.prompt_blocks import DEFAULT_BLOCK_TOKENS
from sfqtui.emulator.app import EmulatedEngine, create_app

# Open streams keep uvicorn's shutdown waiting: after this long it cancels them.
SHUTDOWN_GRACE_S = 5


class EngineServer(uvicorn.Server):
    def __init__(self, model: EngineModel, served_model_name: str, block_tokens: int | None = DEFAULT_BLOCK_TOKENS) -> None:
        self.engine = EmulatedEngine(model, served_model_name, block_tokens)
        super().__init__(uvicorn.Config(create_app(self.engine), lifespan="on", log_level="warning", access_log=False,
                                        timeout_graceful_shutdown=SHUTDOWN_GRACE_S))
