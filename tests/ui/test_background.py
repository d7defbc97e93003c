"""Background work cannot crash the dashboard: workers read a bounded snapshot of a growing
log, a worker's failure is shown and the app goes on, and the collector pause has one owner."""

from __future__ import annotations

import gc
import re
import threading
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.message import Message
from textual.notifications import Notify
from textual.worker import Worker, WorkerState

from sfqtui.core.gcpause import CollectorPause
from sfqtui.core.log.table import EventBatch, EventTable
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.runs.opening import Opening
from sfqtui.trace.load import load_trace
from sfqtui.trace.sources import ReplaySource
from sfqtui.ui.app import SfqApp
from sfqtui.ui.loading.messages import Opened
from sfqtui.ui.panes.shares import shares_chart
from sfqtui.ui.side_by_side.run_pane import RunPane
from tests.dashboard import dashboard, settle, text_of, until

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"


@pytest.fixture(autouse=True)
def collector_on_after() -> Iterator[None]:
    yield
    gc.enable()  # a failing test here must not leave the collector off for the next


class AppendsWhileRead(EventTable):
    """A table to which "the main thread" appends its next batch whenever a reader looks at
    its dispatches: the worst moment, between two reads of a worker."""

    def __init__(self, scheduler: str) -> None:
        self.pending: list[EventBatch] = []  # appended one by one once reading starts
        self._appending = False
        super().__init__(scheduler)

    @property
    def dispatches(self) -> array[int]:
        if self.pending and not self._appending:
            self._appending = True
            try:
                self.append(self.pending.pop(0))
            finally:
                self._appending = False
        return self._dispatches

    @dispatches.setter
    def dispatches(self, value: array[int]) -> None:
        self._dispatches = value


def batches(trace: str, chunk: int = 500) -> list[EventBatch]:
    return [batch for batch, _ in ReplaySource(load_trace(TRACES / trace), ReplayConfig("sfq", 8), chunk=chunk).batches()]


def test_the_chart_reads_the_events_before_its_bound_while_batches_with_new_users_arrive() -> None:
    loaded = batches("production-20k.parquet")
    assert all(batch.new_users for batch in loaded[2:6])  # users keep arriving
    growing, plain = AppendsWhileRead("sfq"), EventTable("sfq")
    for batch in loaded[:2]:
        growing.append(batch)
        plain.append(batch)
    bound = len(growing)
    growing.pending = loaded[2:]
    charted = shares_chart(growing, bound)
    assert len(growing) > bound and len(growing.users) > len(plain.users)  # the table grew while it was read
    assert charted == shares_chart(plain, bound)


def raising(what: str) -> Callable[..., None]:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError(what)

    return broken


def notices(messages: list[Message]) -> list[str]:
    return [m.notification.message for m in messages if isinstance(m, Notify)]


async def test_a_worker_that_raises_is_reported_and_the_app_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sfqtui.ui.loading.run_loader.shares_chart", raising("a bug in the chart"))
    messages: list[Message] = []
    app = dashboard("seed-example.parquet")
    async with app.run_test(size=(120, 34), message_hook=messages.append) as pilot:
        await settle(pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("n", "n")
        assert app.is_running and app.cursor.dispatch_number == 1
        assert any(said.startswith("binning the shares chart seed-example.parquet, sfq, 1 slot failed: RuntimeError: a bug in the chart")
                   for said in notices(messages))
        assert "Dispatch" in text_of(app.query_one("#explain"))  # the views still follow the keys


async def test_a_pane_whose_loading_fails_says_so_and_the_other_panes_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = ReplaySource.batches

    def batches(self: ReplaySource) -> Iterator[tuple[EventBatch, float | None]]:
        if self.scheduler == "drr":
            raise RuntimeError("a bug in the replay")
        yield from replay(self)

    monkeypatch.setattr(ReplaySource, "batches", batches)
    openings = [Opening(TRACES / "heavy-vs-light.parquet", is_log=False, config=ReplayConfig(name, 4), slots_given=True) for name in ("sfq", "drr")]
    app = SfqApp(openings, lockstep="dispatch")
    messages: list[Message] = []
    async with app.run_test(size=(160, 44), message_hook=messages.append) as pilot:
        await settle(pilot)
        sfq, drr = app.runs
        await pilot.press("n", "n")
        assert app.is_running and not drr.loading and sfq.cursor.dispatch_number == 1
        # the sequence for the failing pane: it opened, its worker failed, the failure was said
        seen = [m for m in messages if (isinstance(m, Opened) and m.run == drr.key)
                or (isinstance(m, Worker.StateChanged) and m.state == WorkerState.ERROR) or isinstance(m, Notify)]
        assert [type(m).__name__ for m in seen] == ["Opened", "StateChanged", "Notify"]
        assert notices(messages) == [f"loading {drr.title} failed: RuntimeError: a bug in the replay\n(a bug in sfqtui: the rest goes on)"]
        assert app.query_one(f"#pane-{sfq.key}", RunPane).head.text.startswith("seq ")


async def test_a_screens_worker_that_raises_is_reported_by_the_same_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sfqtui.ui.screens.calibration_view.calibrate_log", raising("a bug in the calibration"))
    messages: list[Message] = []
    app = dashboard("seed-example.parquet")
    async with app.run_test(size=(120, 34), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await until(pilot, lambda: notices(messages), "the failure to be said")
        await pilot.press("escape", "n")
        assert app.is_running and app.cursor.k >= 0
        assert notices(messages) == ["measuring the calibration failed: RuntimeError: a bug in the calibration\n(a bug in sfqtui: the rest goes on)"]


@pytest.mark.parametrize("order", ["first out first", "last out first"])
def test_pauses_held_at_once_leave_the_collector_on_only_after_the_last(order: str) -> None:
    """Two loading threads pause the collector in turn and end in either order."""
    assert gc.isenabled()
    a, b = CollectorPause(), CollectorPause()
    a.hold()
    b.hold()
    first, last = (a, b) if order == "first out first" else (b, a)
    first.release()
    first.release()  # letting go twice is letting go once
    assert not gc.isenabled()
    last.release()
    assert gc.isenabled()


def test_a_pause_taken_while_the_collector_was_off_leaves_it_off() -> None:
    gc.disable()
    try:
        pause = CollectorPause()
        pause.hold()
        pause.release()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_replays_on_two_threads_leave_the_collector_on() -> None:
    trace = load_trace(TRACES / "production-20k.parquet").trace
    chunks: list[int] = []

    def replay(scheduler: str) -> None:
        chunks.extend(Replay(trace, ReplayConfig(scheduler, 8)).run(chunk=2000))

    threads = [threading.Thread(target=replay, args=(name,)) for name in ("sfq", "drr", "sfq-reset")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(chunks) > 30 and gc.isenabled()


def test_only_the_pause_module_switches_the_collector() -> None:
    switching = re.compile(r"\bgc\.(disable|enable|freeze|unfreeze)\(")
    found = [path.relative_to(ROOT).as_posix() for path in (ROOT / "sfqtui").rglob("*.py") if switching.search(path.read_text())]
    assert found == ["sfqtui/core/gcpause.py"]
