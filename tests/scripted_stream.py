"""A stand-in for a proxy's stream that says what a test scripts: §8's /v1/sfq/events and
/v1/sfq/state, served on loopback by uvicorn, with the frames the test sends as it goes.

For what a real proxy (or group) only shows under faults that are slow to cause: a
``bound`` event of a replica whose store is away, a group's state, a lone proxy's events.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_upstream import ServerThread

RUN_ID = "run-1"
STARTED = 1_764_581_445.0  # the run's start, Unix time


def event(seq: int, kind: str = "arrive", user: str = "alice", replica: int | None = None, t: float | None = None) -> dict[str, Any]:
    """A §7 event (an arrive unless told), the way the proxy publishes it."""
    return {"seq": seq, "t": float(seq) if t is None else t, "kind": kind, "scheduler": "sfq", "request_id": f"r{seq}", "user": user,
            "cost": 10.0 if kind == "dispatch" else None, "v": 0.0, "meter": 10.0, "deficit": None, "weight": 1.0, "replica": replica}


class ScriptedStream:
    """Serves a state and, on every connection, ``run`` then each frame sent so far and those sent later."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = {"run": RUN_ID, "seq": -1, "t": 0.0, "scheduler": "sfq", "v": 0.0, "slots": 4, "inflight": 0, "users": [], **state}
        self._frames: list[str] = []
        self._lock = threading.Lock()
        self._ended = False
        self.app = Starlette(routes=[Route("/v1/sfq/events", self._events), Route("/v1/sfq/state", self._state)])

    def send(self, data: dict[str, Any], kind: str | None = None) -> None:
        """One SSE event: a §7 event (``kind`` None), or a typed one (``bound``, or a §7 event of its own type: ``limit``, ...)."""
        head = (f"event: {kind}\n" if kind else "") + (f"id: {data['seq']}\n" if "seq" in data else "")
        with self._lock:
            self._frames.append(f"{head}data: {json.dumps(data)}\n\n")

    def end(self) -> None:
        """End the stream: each connection ends once it has sent what was sent before, and a
        later one is answered 404 (no stream here any more), so a client gives up and its source ends."""
        with self._lock:
            self._ended = True

    async def _state(self, _request: Request) -> JSONResponse:
        return JSONResponse(self.state)

    async def _events(self, request: Request) -> Response:
        if self._ended:
            return Response(status_code=404)

        async def frames() -> AsyncIterator[str]:
            yield f"event: run\ndata: {json.dumps({'run': RUN_ID, 'started': STARTED})}\n\n"
            sent = 0
            while not await request.is_disconnected():
                with self._lock:
                    new, ended = self._frames[sent:], self._ended
                sent += len(new)
                for frame in new:
                    yield frame
                if ended:
                    return
                await asyncio.sleep(0.02)

        return StreamingResponse(frames(), media_type="text/event-stream")

    def serve(self) -> ServerThread:
        return ServerThread(uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                                          timeout_graceful_shutdown=1)))
