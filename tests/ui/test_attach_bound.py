"""attach and a group's bound (docs/protocol.md, ``bound``): while the replica followed cannot
reach the store, the status line says "bound suspended", since when and why, and goes
back once the bound is global again; a recording keeps the changes, and its replay says
the bound at the cursor. A lone proxy's events have no replica column.

The stream is scripted (tests/scripted_stream.py): a store outage on a real group is slow
to cause, and the words on screen are what is tested here.
"""

from __future__ import annotations

from pathlib import Path

from sfqtui.attach.bound import BOUND_KEY, Bound, bound_at
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.trace.eventlog import read_log
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.event_log import EventLogHeader
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.stream.connection import clock
from tests.dashboard import settle, text_of, until
from tests.proxy_fixtures import wait_for
from tests.scripted_stream import STARTED, ScriptedStream, event

SIZE = (160, 40)
GROUP = {"bound": "global", "replicas": 2}
AWAY = "Error 111 connecting to 127.0.0.1:6390. Connection refused."


def status(app: SfqApp) -> str:
    return text_of(app.query_one(StatusLine))


async def test_the_status_line_says_while_the_bound_is_suspended_since_when_and_why(tmp_path: Path) -> None:
    stream = ScriptedStream(GROUP)
    saved = tmp_path / "group.parquet"
    with stream.serve() as server:
        opening = LiveOpening(server.url, record=saved)
        app = SfqApp(opening)
        async with app.run_test(size=SIZE) as pilot:
            for seq in range(3):
                stream.send(event(seq, replica=seq % 2))
            await until(pilot, lambda: len(app.table) == 3, "the first events")
            assert "suspended" not in status(app)
            assert " r " in text_of(app.query_one(EventLogHeader))  # a group's events name their replica
            stream.send({"run": "run-1", "bound": "suspended", "reason": AWAY, "since": STARTED + 10.5}, "bound")
            await until(pilot, lambda: "bound suspended" in status(app), "the suspension on screen")
            assert f"bound suspended since {clock(STARTED + 10.5)}: {AWAY}" in status(app)
            stream.send(event(3, replica=1, t=12.0))  # the other replica's, sent on rejoining
            stream.send({"run": "run-1", "bound": "global", "reason": "the store answers again", "since": STARTED + 20.0}, "bound")
            await until(pilot, lambda: "suspended" not in status(app), "the bound global again")
            assert "● live" in status(app)
            stream.send(event(4, replica=0, t=21.0))
            await until(pilot, lambda: len(app.table) == 5, "the last event")
    recording = opening.recording
    assert recording is not None
    wait_for(lambda: recording.saved, what="the recording")
    _df, metadata = read_log(saved)
    assert [(change["bound"], change["t"]) for change in metadata[BOUND_KEY]] == [("suspended", 10.5), ("global", 20.0)]

    replay = SfqApp(Opening(saved, is_log=True, config=ReplayConfig()))
    async with replay.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home", "right", "right", "right")  # seq 2, t=2: before the outage
        assert "suspended" not in status(replay)
        await pilot.press("right")  # seq 3, t=12: during it
        assert f"bound suspended since {clock(STARTED + 10.5)}: {AWAY}" in status(replay)
        await pilot.press("right")  # seq 4, t=21: after it
        assert "suspended" not in status(replay)


async def test_a_bound_found_suspended_reads_by_when_it_was_heard() -> None:
    """The proxy names no time: the bound a connection finds is suspended by then at the latest;
    a change heard as it happens is since then."""
    stream = ScriptedStream(GROUP)
    with stream.serve() as server:
        stream.send(event(0, replica=0))
        stream.send({"run": "run-1", "bound": "suspended", "reason": AWAY}, "bound")
        app = SfqApp(LiveOpening(server.url))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "bound suspended" in status(app), "the suspension on screen")
            assert "bound suspended by " in status(app) and AWAY in status(app)
            stream.send({"run": "run-1", "bound": "global"}, "bound")
            await until(pilot, lambda: "suspended" not in status(app), "the bound global again")
            stream.send({"run": "run-1", "bound": "suspended"}, "bound")  # no reason either: what is known
            await until(pilot, lambda: "bound suspended" in status(app), "the second suspension")
            assert "bound suspended since " in status(app) and AWAY not in status(app)


async def test_a_group_state_found_suspended_says_so_before_any_bound_event() -> None:
    stream = ScriptedStream({"bound": "suspended", "replicas": 3})
    with stream.serve() as server:
        app = SfqApp(LiveOpening(server.url))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "bound suspended by " in status(app), "the state's bound on screen")


async def test_a_lone_proxy_has_no_replica_column(tmp_path: Path) -> None:
    stream = ScriptedStream({})  # a lone proxy's state names no bound and no replicas
    saved = tmp_path / "lone.parquet"
    with stream.serve() as server:
        opening = LiveOpening(server.url, record=saved)
        app = SfqApp(opening)
        async with app.run_test(size=SIZE) as pilot:
            for seq in range(3):
                stream.send(event(seq))
            await until(pilot, lambda: len(app.table) == 3, "the events")
            assert not app.table.replicated
            header = text_of(app.query_one(EventLogHeader))
            assert "kind" in header and " r " not in header
    recording = opening.recording
    assert recording is not None
    wait_for(lambda: recording.saved, what="the recording")
    df, _metadata = read_log(saved)
    assert len(df) == 3 and "replica" not in df.columns  # its replay lists no replica column either


def test_the_bound_at_a_time_of_a_recording() -> None:
    changes = [{"t": 5.0, "bound": "suspended", "reason": "away", "since": 100.0}, {"t": 9.0, "bound": "global", "reason": "", "since": 104.0}]
    assert bound_at(changes, 4.9) is None
    assert bound_at(changes, 5.0) == Bound("suspended", "away", 100.0)
    assert bound_at(changes, 9.5) == Bound("global", "", 104.0)
