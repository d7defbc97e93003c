"""A live stream that ends keeps the audit it reported as it came: its violations stay
marked and `x` goes to them (no whole-log audit of the stream replaces them with none)."""

from __future__ import annotations

from sfqtui.runs.run import LiveRun
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp
from tests.dashboard import notifications, until
from tests.scripted_stream import ScriptedStream, event

SIZE = (160, 40)


async def test_a_stream_that_ends_keeps_its_violations() -> None:
    stream = ScriptedStream({})
    with stream.serve() as server:
        app = SfqApp(LiveOpening(server.url))
        async with app.run_test(size=SIZE) as pilot:
            for seq in range(5):
                stream.send(event(seq))  # alice joins with meter 10 where v is 0: seq 0 breaks §3's join rule
            run = app.current
            assert isinstance(run, LiveRun)
            await until(pilot, lambda: len(run.table) == 5 and list(run.violations) == [0], "the stream's audit")
            stream.end()
            await until(pilot, lambda: not run.loading, "the stream's end")
            await app.workers.wait_for_complete()  # what the end started (the chart) has posted
            await pilot.pause()
            assert run.checked and list(run.violations) == [0] and [v.rule for v in run.broken[0]] == ["§3 join"]
            await pilot.press("home", "x")
            assert app.cursor.k == 0
            assert notifications(app)[-1].title == "seq 0 breaks §3 join"
