"""`g 1234` in a live window that starts mid-stream goes to seq 1234, not to the 1234th event
held, and says when that seq is no longer held. The stream is scripted: the client joins
after the proxy's ring dropped its first events (its first event is seq 5,000)."""

from __future__ import annotations

from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp
from tests.dashboard import notifications, until
from tests.scripted_stream import ScriptedStream, event

SIZE = (160, 40)
FIRST = 5_000


def notes(app: SfqApp) -> list[str]:
    return [n.message for n in notifications(app)]


async def test_goto_takes_a_seq_in_a_window_that_starts_mid_stream_and_says_when_it_is_gone() -> None:
    stream = ScriptedStream({"seq": FIRST - 1, "v": 0.0, "users": [{"user": "alice", "meter": 0.0, "weight": 1.0, "queued": 0, "inflight": 0}]})
    with stream.serve() as server:
        app = SfqApp(LiveOpening(server.url))
        async with app.run_test(size=SIZE) as pilot:
            for seq in range(FIRST, FIRST + 10):
                stream.send(event(seq))
            await until(pilot, lambda: len(app.table) and app.table.first_seq + len(app.table) - 1 == FIRST + 9, "the events")
            first = app.table.first_seq
            assert FIRST - 1 <= first < FIRST  # the window starts at the gap the join left
            await pilot.press("g", *str(FIRST + 3), "enter")
            await pilot.pause()
            assert app.table.first_seq + app.cursor.k == FIRST + 3
            await pilot.press("g", *"1234", "enter")
            await pilot.pause()
            assert app.table.first_seq + app.cursor.k == FIRST + 3  # it stays where it was
            assert f"seq 1,234 is no longer held: the window starts at seq {first:,}" in notes(app)
            await pilot.press("g", *str(FIRST + 50), "enter")
            await pilot.pause()
            assert f"nothing matches '{FIRST + 50}'" in notes(app)
