"""`sfqtui attach`: the dashboard on a real proxy's stream, on loopback.

The same views as replay, fed as events arrive; following the newest event; the
connection state in the status line; a cut connection resumed without loss; a gap
marked and the state read again; a bounded window; the stream saved as a log.
"""

from __future__ import annotations

from pathlib import Path

from sfqtui.core.events import GAP
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.stream.connection import WaitingForEvents
from tests.dashboard import LIVE_SIZE, seen, text_of, until
from tests.proxy_fixtures import ask, running_proxy, state
from tests.tcp_relay import TcpRelay


async def test_the_dashboard_follows_a_live_proxy(fake, keys_path: Path, tmp_path: Path) -> None:
    _, upstream_url = fake
    saved = tmp_path / "live.parquet"
    with running_proxy(upstream_url, keys_path) as px:
        app = SfqApp(LiveOpening(px.url, record=saved))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            ask(px.url, 3, user="bob")
            ask(px.url, 2, user="alice")
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the app to catch up")
            assert app.cursor.k == len(app.table) - 1  # following the newest
            status = text_of(app.query_one(StatusLine))
            assert "● live" in status and "following" in status
            assert len(app.table.dispatches) == 5 and set(app.table.users) == {"alice", "bob"}
            assert app.current.checked and list(app.cursor.violations) == []  # audited as it arrives
            await pilot.press("left")
            live = app.current.live
            assert live is not None and not live.following
            ask(px.url, 1, user="carol")
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "more events")
            assert app.cursor.k < len(app.table) - 1  # stepped back: it stays put
            await pilot.press("space")
            assert live.following and app.cursor.k == len(app.table) - 1
            await pilot.press("n", "p")  # the why panel explains a live dispatch like a replayed one
            assert "why:" in app.query_one("#explain").text or "only user" in app.query_one("#explain").text
        last = state(px.url)["seq"]
    replayed = Run(Opening(saved, is_log=True, config=ReplayConfig())).load_all()
    assert len(replayed.table) == last + 1 and len(replayed.table.dispatches) == 6


async def test_a_cut_connection_resumes_without_loss_and_a_clean_stop_reads_otherwise(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        relay = TcpRelay(px.port)
        app = SfqApp(LiveOpening(relay.url))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            assert str(app.query_one(WaitingForEvents).content).startswith(f"Connected to {relay.url}: no event yet.")
            ask(px.url, 2)
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the app to catch up")
            # the log lists the events now (the message's removal is its own step after the events land)
            await until(pilot, lambda: not app.query(WaitingForEvents), "the waiting message to go")
            relay.cut(refuse=True)  # a crash, as the client sees it: the stream cut without a bye
            ask(px.url, 2, user="alice")
            await until(pilot, lambda: app.current.connection == "reconnecting", "the app to notice")
            status = text_of(app.query_one(StatusLine))
            assert "connection lost (the stream was cut), retrying" in status and "stopped" not in status
            relay.accept_again()
            await until(pilot, lambda: seen(app) == state(px.url)["seq"] and app.current.connection == "live", "the resume")
            assert len(app.table) == state(px.url)["seq"] + 1 and app.table.first_seq == 0  # nothing lost, nothing twice
            assert GAP not in app.table.kind
            px.stop()  # a clean shutdown (SIGTERM's path): the proxy says bye before it closes the stream
            await until(pilot, lambda: app.current.connection == "stopped", "the stop")
            status = text_of(app.query_one(StatusLine))
            assert "the proxy stopped (shutdown), retrying" in status and "connection lost" not in status
        relay.close()


async def test_a_gap_is_marked_and_the_state_read_again(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, ring_size=6) as px:
        ask(px.url, 4)  # more events than the ring holds
        last = state(px.url)["seq"]
        app = SfqApp(LiveOpening(px.url))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: len(app.table) and seen(app) == state(px.url)["seq"], "the app to catch up")
            assert app.table.kind[0] == GAP and app.table.first_seq == last  # the state read again is as of the last seq
            assert app.current.audit_failure is None and app.current.live is not None and not app.current.live.violations  # audited from the state at the join
            first_held = app.table.first_seq + 1
            await pilot.press("home", "right")
            assert f"before seq {first_held}" in app.query_one("#explain", ExplainPanel).text
            ask(px.url, 1, user="alice")
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "new events after the gap")
            state_now = app.timeline.state_at(len(app.table) - 1)
            assert min(state_now.queued) >= 0 and min(state_now.inflight_of) >= 0  # seeded from the proxy's state


async def test_memory_holds_a_window_of_recent_events(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        app = SfqApp(LiveOpening(px.url, window=100))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            for user in ("alice", "bob", "carol"):
                ask(px.url, 30, user=user)
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the app to catch up", timeout=60)
            assert state(px.url)["seq"] > 300
            assert app.table.first_seq > 0 and len(app.table) < state(px.url)["seq"] // 2
            assert app.cursor.k == len(app.table) - 1
            s = app.timeline.state_at(len(app.table) - 1)
            assert min(s.queued) >= 0 and s.inflight == 0
