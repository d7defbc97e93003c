"""attach and --slots auto: the status line says the slots follow the upstreams' limits, and how many there are now,
from the proxy's state and then from each ``limit`` event (docs/protocol.md). The stream is scripted
(tests/scripted_stream.py): what is tested is the words on screen."""

from __future__ import annotations

from typing import Any

from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.status_line import StatusLine
from tests.dashboard import text_of, until
from tests.scripted_stream import ScriptedStream, event

SIZE = (160, 40)


def limit_row(upstream: str, limit: int) -> dict[str, Any]:
    return {"upstream": upstream, "limit": limit, "maximum": 256, "source": "metrics", "reason": "start", "running": 0, "waiting": 0,
            "kv_usage": 0.0}


def limit_event(seq: int, upstream: str, limit: int) -> dict[str, Any]:
    return {"seq": seq, "t": float(seq), "kind": "limit", "scheduler": "sfq", "request_id": None, "user": None, "cost": None,
            "v": None, "meter": None, "deficit": None, "upstream": upstream, "limit": limit, "reason": "room"}


async def test_the_status_line_follows_the_limits() -> None:
    stream = ScriptedStream({"slots": 4, "limits": [limit_row("a:8000", 2), limit_row("b:8000", 2)]})
    with stream.serve() as server:
        app = SfqApp(LiveOpening(server.url))
        async with app.run_test(size=SIZE) as pilot:
            stream.send(event(0))
            await until(pilot, lambda: len(app.table) == 1, "the first event")
            await until(pilot, lambda: "slots auto (2+2)" in text_of(app.query_one(StatusLine)), "the limits from the state")
            assert "in flight 0/4 slots auto (2+2)" in text_of(app.query_one(StatusLine))
            stream.send(limit_event(1, "a:8000", 7), "limit")
            stream.send(event(2))
            await until(pilot, lambda: len(app.table) == 3, "the events after the limit")
            await until(pilot, lambda: "in flight 0/9 slots auto (7+2)" in text_of(app.query_one(StatusLine)), "the new limit")
