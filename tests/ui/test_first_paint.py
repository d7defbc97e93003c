"""Issue 34 §5: a saved log is on screen as soon as its first events are read, whatever its
size; what the screen cannot know yet (the last event) says so, and the numbers that come
later are the file's; a row further on that cannot be shown is said when it is reached."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli_app
from sfqtui.core.numbers import count, percent
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.errors import InputError
from sfqtui.trace.eventlog import validate_log
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from sfqtui.trace.sources import FIRST_ROWS
from sfqtui.ui.loading import run_loader
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.meter_band import MeterBand
from sfqtui.ui.panes.status_line import StatusLine
from tests.dashboard import SETTLE_S, SIZE, TRACES, dashboard, notifications, settle, text_of, until, without_audit

BAD_ROW = 10_000  # past the first rows, within the first full batch after them


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of some 60,000 events: many more than the first screen's."""
    path = tmp_path_factory.mktemp("first-paint") / "production.log.parquet"
    simulate(load_trace(TRACES / "production-20k.parquet"), ReplayConfig("sfq", 64), path)
    return path


@pytest.fixture
def bad_further_on(log: Path, tmp_path: Path) -> Path:
    """The log with an unknown kind at BAD_ROW."""
    path = tmp_path / "bad.parquet"
    rows = pl.read_parquet(log)
    rows.with_columns(kind=pl.when(pl.col("seq") == BAD_ROW).then(pl.lit("teleport")).otherwise(pl.col("kind"))).write_parquet(path)
    return path


def held_after_the_first_events(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The loader draws the first events, then waits until the returned event is set."""
    release = threading.Event()
    drawn: Callable[[threading.Event, run_loader.Stopped], bool] = run_loader.until_shown

    def held(shown: threading.Event, stopped: run_loader.Stopped) -> bool:
        return drawn(shown, stopped) and release.wait(SETTLE_S)

    monkeypatch.setattr(run_loader, "until_shown", held)
    return release


async def test_the_first_events_are_drawn_before_the_rest_is_read_and_the_numbers_that_come_later_are_right(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    release = held_after_the_first_events(monkeypatch)
    events = pq.read_metadata(log).num_rows
    first = pl.read_parquet(log, n_rows=1).row(0, named=True)
    app = dashboard(log, is_log=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app.table), "the first events")
        await pilot.press("right")
        assert len(app.table) == FIRST_ROWS < events  # the rest is not read
        status = text_of(app.query_one(StatusLine))
        assert "(last: counting…)" in status and f"loading {percent(FIRST_ROWS / events, 0)}" in status
        assert count(FIRST_ROWS - 1) not in status  # not the last event loaded, as if it were the log's
        assert first["request_id"] in text_of(app.query_one(EventLog))
        assert first["user"] in text_of(app.query_one(MeterBand))  # the first event's user, in the band
        await pilot.press("slash", *first["user"], "enter")
        assert " so far · N next" in str(app.query_one("#log-box").border_subtitle)  # more may come
        release.set()
        await settle(pilot, analysed=False)
        assert len(app.table) == events
        assert f"(last {count(events - 1)})" in text_of(app.query_one(StatusLine))
        await pilot.press("N")
        theirs = pl.read_parquet(log, columns=["user", "request_id"]).filter(
            pl.col("user").str.contains(first["user"], literal=True) | pl.col("request_id").str.contains(first["user"], literal=True)).height
        assert f"of {theirs:,} · N next" in str(app.query_one("#log-box").border_subtitle)
        assert sorted(app.table.users) == sorted(pl.read_parquet(log, columns=["user"])["user"].drop_nulls().unique())


async def test_a_row_further_on_that_cannot_be_shown_is_said_when_it_is_reached(bad_further_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    app = dashboard(bad_further_on, is_log=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, analysed=False)
        said = [n for n in notifications(app) if n.title == "cannot read the rest"]
        assert len(said) == 1
        assert f"row {BAD_ROW} (counting from 0): unknown event kind 'teleport'" in said[0].message
        assert f"its first {count(FIRST_ROWS)} events are shown" in said[0].message
        assert len(app.table) == FIRST_ROWS
        assert f"(last {count(FIRST_ROWS - 1)})" in text_of(app.query_one(StatusLine))  # all there is to show now


def test_the_command_opens_a_log_on_its_first_rows_and_refuses_what_they_break(
        bad_further_on: Path, log: Path, tmp_path: Path, cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []
    monkeypatch.setattr("sfqtui.ui.app.run_dashboard", lambda openings, **_kwargs: opened.append(openings))
    assert cli.invoke(cli_app, ["replay", str(bad_further_on)]).exit_code == 0  # not read through before the app opens
    assert len(opened) == 1
    with pytest.raises(InputError, match=f"row {BAD_ROW} "):
        validate_log(bad_further_on)  # read through
    early = tmp_path / "early.parquet"
    pl.read_parquet(log).with_columns(kind=pl.when(pl.col("seq") == FIRST_ROWS - 1).then(pl.lit("teleport")).otherwise(pl.col("kind"))) \
        .write_parquet(early)
    result = cli.invoke(cli_app, ["replay", str(early)])
    assert result.exit_code == 2 and f"row {FIRST_ROWS - 1} (counting from 0): unknown event kind" in result.stderr
    assert len(opened) == 1
