"""attach and the proxy's life: a URL where nothing listens, and a restart, which is a new
run kept apart on screen and in the recording (a crash against a clean stop: test_attach.py)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from sfqtui.attach.run_logs import run_log_path
from sfqtui.cli.app import app as cli_app
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.trace.eventlog import read_log
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.shares import SharesPanel
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.stream.connection import WaitingForEvents, clock
from tests.dashboard import LIVE_SIZE, seen, text_of, until
from tests.fake_upstream import closed_port
from tests.proxy_fixtures import ask, running_proxy, state, wait_for


def status(app: SfqApp) -> str:
    return text_of(app.query_one(StatusLine))


def waiting(app: SfqApp) -> str:
    return str(app.query_one(WaitingForEvents).content)


async def test_a_dead_url_shows_its_state_within_seconds_and_counts_down() -> None:
    url = closed_port()
    app = SfqApp(LiveOpening(url))
    async with app.run_test(size=LIVE_SIZE) as pilot:
        await until(pilot, lambda: "unreachable: connection refused, retrying" in status(app), "the state", timeout=10)
        assert "loading" not in status(app)
        assert waiting(app).startswith(f"Nothing answers at {url}: connection refused.")
        countdowns: dict[float, set[int]] = {}  # each attempt's countdown, as the status line shows it
        live = app.current.live
        assert live is not None
        for _ in range(int(6 / 0.1)):
            link = live.link
            shown = re.search(r"retrying in (\d+) s", status(app))
            if link is not None and link.retry_at is not None and shown:
                countdowns.setdefault(link.retry_at, set()).add(int(shown.group(1)))
            await pilot.pause(0.1)
        assert any(len(values) > 1 for values in countdowns.values()), countdowns  # it counts down between attempts
        assert len(app.table) == 0


async def test_a_restarted_proxy_is_a_new_run_kept_browsable_and_recorded_apart(fake, keys_path: Path, tmp_path: Path,
                                                                               cli: CliRunner) -> None:
    _, upstream_url = fake
    url = closed_port()
    port = int(url.rsplit(":", 1)[1])
    saved = tmp_path / "x.parquet"
    opening = LiveOpening(url, record=saved)
    app = SfqApp(opening)
    async with app.run_test(size=LIVE_SIZE) as pilot:
        with running_proxy(upstream_url, keys_path, port=port) as px:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            ask(px.url, 3, user="bob")
            first = state(px.url)
            await until(pilot, lambda: seen(app) == first["seq"], "the first run's events")
            await until(pilot, lambda: "share of each time bin" in text_of(app.query_one(SharesPanel)), "the run's shares chart")
        await until(pilot, lambda: app.current.connection == "stopped", "the stop")
        with running_proxy(upstream_url, keys_path, port=port) as px:  # the same address, a new run
            ask(px.url, 2, user="alice")
            second = state(px.url)
            following = app.current.live
            assert following is not None
            await until(pilot, lambda: following.proxy_run is not None and following.proxy_run.run == second["run"]
                        and seen(app) == second["seq"], "the new run's events")
            live = app.current
            assert following.proxy_run is not None and following.proxy_run.started is not None
            assert f"● live 127.0.0.1:{port}  new proxy run since {clock(following.proxy_run.started)}" in status(app)
            assert app.table.first_seq == 0 and len(app.table) == second["seq"] + 1 and app.table.users == ["alice"]
            assert "bob" not in text_of(app.query_one(SharesPanel))  # the first run's chart went with its table
            assert app.check_action("earlier_proxy_run", ())  # the key is a live stream's (a replay's help leaves it out)
            await pilot.press("e")  # the earlier run, as it was
            assert app.current is not live and len(app.table) == first["seq"] + 1 and app.table.users == ["bob"]
            assert live.live is not None and live.live.proxy_run is not None and live.live.proxy_run.started is not None
            assert f"proxy run 1 of 2, ended by {clock(live.live.proxy_run.started)}" in status(app) and "● live" in status(app)
            assert "new proxy run since" not in status(app)  # one clear line: the run shown, and when it ended
            ask(px.url, 1, user="alice")  # the live run goes on meanwhile
            await until(pilot, lambda: live.table.first_seq + len(live.table) - 1 == state(px.url)["seq"], "more events")
            assert len(app.table) == first["seq"] + 1
            await pilot.press("e")  # back to the live run, at its newest event
            assert app.current is live and app.cursor.k == len(app.table) - 1
            last = state(px.url)["seq"]
    recording = opening.recording
    assert recording is not None
    wait_for(lambda: len(recording.saved) == 2, what="both logs")
    assert recording.saved == [(saved, first["seq"] + 1), (run_log_path(saved, 2), last + 1)] and recording.problems == []
    for path, run, events in ((saved, first["run"], first["seq"] + 1), (tmp_path / "x.run2.parquet", second["run"], last + 1)):
        df, metadata = read_log(path)
        assert metadata["run"] == run and df["seq"].to_list() == list(range(events))
        result = cli.invoke(cli_app, ["check", str(path)])
        assert result.exit_code == 0, result.stdout

