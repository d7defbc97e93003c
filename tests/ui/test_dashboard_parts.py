"""The dashboard's parts, each without an app: the loader's jobs, the open runs taking the
loader's messages, a live stream's follower, the player, and the export's frames."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message

from sfqtui.attach.stream import LIVE, RECONNECTING, RunStarted, Status
from sfqtui.core.analysis.audit import Violation
from sfqtui.core.analysis.fairness import FairnessReport
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.export_frames import ListedRows, log_frame, shares_frame
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.loading.messages import Analysed, ChartReady, EventsLoaded, LiveAudit, LoadFailed, LoadFinished, Opened, WindowStarted
from sfqtui.ui.loading.open_runs import OpenRuns
from sfqtui.ui.loading.run_loader import RunLoader
from sfqtui.ui.player import TICKS_PER_S, Player
from sfqtui.ui.side_by_side.teacher import Teacher
from sfqtui.ui.stream.follower import LiveFollower
from tests.late_log import JOIN, late_log

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "heavy-vs-light.parquet"


class Stage:
    """A stand-in for the app: it keeps what is posted, started, said and shown."""

    def __init__(self) -> None:
        self.posted: list[Message] = []
        self.started: list[str] = []  # the workers' groups
        self.said: list[str] = []
        self.progress: list[tuple[float | None, bool | None]] = []
        self.tables: list[int] = []  # the run keys whose table the log lists
        self.redrawn = 0
        self.drawing = True

    def post_message(self, message: Message) -> bool:
        self.posted.append(message)
        if isinstance(message, EventsLoaded) and message.shown is not None:
            message.shown.set()  # drawn at once
        return True

    def notify(self, message: str, *, title: str = "", severity: str = "information", timeout: float | None = None) -> None:
        self.said.append(message)

    def run_worker(self, work: Callable[[], None] | Coroutine[Any, Any, None], *, group: str = "default", description: str = "",
                   exit_on_error: bool = True, thread: bool = False) -> Any:
        self.started.append(group)
        return object()

    def refresh_views(self) -> None:
        self.redrawn += 1

    def call_after_refresh(self, callback: Callable[[], object]) -> bool:
        callback()
        return True

    def show_title(self, title: str) -> None:
        pass

    def show_progress(self, fraction: float | None = None, done: bool | None = None) -> None:
        self.progress.append((fraction, done))

    def use_table(self, run: Run) -> None:
        self.tables.append(run.key)

    def show_chart(self, users: list[int], edges: list[float], series: dict[int, list[float]],
                   engine: FairnessReport | None = None) -> None:
        pass

    def show_waiting(self, text: str | None) -> None:
        pass

    def follow(self) -> None:
        pass

    def autoplay(self) -> None:
        pass


def trace_run(scheduler: str = "sfq") -> Run:
    return Run.of(Opening(TRACE, is_log=False, config=ReplayConfig(scheduler, 2), slots_given=True))


def never() -> bool:
    return False


def test_the_loader_posts_a_whole_replay_and_its_audit_without_an_app() -> None:
    stage, run = Stage(), trace_run()
    loader = RunLoader(stage, lambda _run: True)
    loader.load(run, never)
    kinds = [type(m) for m in stage.posted]
    assert kinds[0] is Opened and kinds[-1] is LoadFinished and EventsLoaded in kinds
    events = sum(len(m.batch) for m in stage.posted if isinstance(m, EventsLoaded))
    assert events == len(Run(run.opening).load_all().table)
    assert loader.sources == {}  # closed once read
    stage.posted.clear()
    loader.load(Run.of(Opening(ROOT / "README.md", is_log=False, config=ReplayConfig())), never)
    assert [type(m) for m in stage.posted] == [LoadFailed]  # said in one message, not raised


def test_the_loader_stops_when_its_run_is_closed() -> None:
    stage, run = Stage(), trace_run()
    RunLoader(stage, lambda _run: True).load(run, lambda: True)
    assert [type(m) for m in stage.posted] == [Opened]  # closed before its first batch: nothing more


def test_open_runs_take_the_loaders_messages_and_start_the_chart_and_audit() -> None:
    stage = Stage()
    runs = OpenRuns(stage, [trace_run().opening], Teacher())
    runs.start(runs.current)
    assert stage.started == ["load"] and stage.progress == [(None, False)]
    runs.loader.load(runs.current, never)
    for message in list(stage.posted):
        runs.take(message)  # type: ignore[arg-type]  # the loader posts run messages only
    run = runs.current
    assert not run.loading and len(run.table) > 0 and run.scheduler == "sfq"
    assert stage.tables == [run.key] and stage.progress[-1] == (None, True)
    assert stage.started == ["load", "chart", "audit"]  # the chart and the audit of the whole log
    stage.posted.clear()
    runs.loader.audit(run, never)
    assert [type(m) for m in stage.posted] == [Analysed]
    runs.take(Analysed(run.key, [Violation("made-up", run.table.first_seq + 3, "a test")], checked=True))
    assert run.checked and list(run.cursor.violations) == [3] and "1 event(s) break an invariant" in stage.said[-1]
    runs.take(LoadFinished(run.key + 1000))  # another run's (a re-run's old key): ignored
    assert stage.started == ["load", "chart", "audit"]


def test_open_runs_show_a_log_from_a_proxys_state_in_its_window_as_load_all_does(tmp_path: Path) -> None:
    late, _whole = late_log(tmp_path)
    stage = Stage()
    runs = OpenRuns(stage, [Opening(late, is_log=True, config=ReplayConfig())], Teacher())
    runs.loader.load(runs.current, never)
    kinds = [type(m) for m in stage.posted]
    assert kinds[:3] == [Opened, WindowStarted, EventsLoaded]  # the window before its first events
    for message in list(stage.posted):
        runs.take(message)  # type: ignore[arg-type]  # the loader posts run messages only
    shown, loaded = runs.current, Run(runs.current.opening).load_all()
    assert shown.table.first_seq == loaded.table.first_seq == JOIN and len(shown.table) == len(loaded.table)
    shown.cursor.end()
    loaded.cursor.end()
    assert shown.state().queued == loaded.state().queued and shown.state().value == loaded.state().value


def test_a_newer_chart_or_live_audit_replaces_a_queued_one_of_the_same_run() -> None:
    run = trace_run()
    chart = ChartReady(run.key, run.table, [], [], {})
    assert chart.can_replace(ChartReady(run.key, run.table, [0], [0.0], {0: [1.0]}))
    assert not chart.can_replace(ChartReady(run.key + 1, run.table, [], [], {}))
    audit = LiveAudit(run.key, [])
    assert audit.can_replace(LiveAudit(run.key, [Violation("r", 1, "m")]))
    assert not audit.can_replace(LiveAudit(run.key, [], stopped="the audit stopped"))  # why it stopped is never dropped


def live_run_with_events(run: Run | None = None) -> Run:
    """A live run (no stream behind it) whose table holds a replay's events."""
    run = run or Run.of(LiveOpening("http://127.0.0.1:9"))
    replay = Run(trace_run().opening).load_all()
    run.table, run.timeline, run.cursor = replay.table, replay.timeline, replay.cursor
    return run


def test_the_live_follower_says_what_the_connection_does() -> None:
    follower, run = LiveFollower(), live_run_with_events()
    assert run.live is not None and run.loaded is None and run.connection is None
    assert follower.connection_changed(run, run.live, Status(LIVE, url="http://a")) is None
    assert run.connection == LIVE and run.checked  # audited as it arrives
    lost = follower.connection_changed(run, run.live, Status(RECONNECTING, "timed out", url="http://a"))
    assert lost is not None and lost.severity == "warning" and "connection lost (timed out)" in lost.message
    assert follower.connection_changed(run, run.live, Status(RECONNECTING, "timed out", url="http://a")) is None  # no news
    moved = follower.connection_changed(run, run.live, Status(LIVE, url="http://b"))
    assert moved is not None and moved.message.startswith("following http://b (http://a")
    link = follower.link_of(run, [run])
    assert link is not None and link.status.url == "http://b" and follower.live_run([run]) is run


def test_a_proxy_restart_keeps_the_earlier_run_browsable() -> None:
    follower, run = LiveFollower(), Run.of(LiveOpening("http://127.0.0.1:9"))
    assert run.live is not None
    runs = [run]
    follower.connection_changed(run, run.live, Status(LIVE, url="http://a"))
    assert follower.proxy_run_started(run, run.live, RunStarted("r1", 100.0, "http://a", restarted=False), run) is None
    events = len(live_run_with_events(run).table)  # the first proxy run's events
    told = follower.proxy_run_started(run, run.live, RunStarted("r2", 200.0, "http://a", restarted=True), run)
    assert told is not None and "restarted" in told.message and "e shows the earlier one" in told.message
    assert len(run.table) == 0 and run.live.new_run_since == 200.0 and run.live.following
    [ended] = follower.ended_runs
    assert len(ended.table) == events and ended.live is not None and ended.live.ended_at is not None
    assert follower.earlier(runs) is ended and runs[0] is ended and follower.offstage == [run]
    viewing = follower.link_of(ended, runs)
    assert viewing is not None and viewing.viewing is not None and viewing.viewing.startswith("proxy run 1 of 2")
    assert follower.earlier(runs) is run and runs[0] is run and follower.offstage == []  # round to the live one


def test_the_live_audit_places_violations_and_a_stop_says_why() -> None:
    follower, run = LiveFollower(), live_run_with_events()
    assert run.live is not None
    said = follower.audited(run, run.live, [Violation("made-up", run.table.first_seq + 5, "a test")], None)
    assert said is not None and list(run.cursor.violations) == [5] and run.checked
    assert follower.audited(run, run.live, [], "the audit stopped: too far behind") is None
    assert not run.checked and run.audit_failure == "the audit stopped: too far behind"
    assert "could not be checked" in run.why_unchecked()


class Leading:
    def __init__(self, run: Run) -> None:
        self.current = run
        self.redrawn = 0

    def follow(self) -> None:
        pass

    def refresh_views(self) -> None:
        self.redrawn += 1


def test_the_player_steps_at_its_speed_and_stops_at_the_end() -> None:
    run = Run(trace_run().opening).load_all()
    player = Player(Leading(run), speed=2 * TICKS_PER_S)
    player.toggle()
    assert player.playing
    for _ in range(5):
        player.tick()
    assert run.cursor.k == 5 * 2 - 1
    player.speed = 10 * len(run.table) * TICKS_PER_S
    player.tick()
    player.tick()  # past the end of a whole log: it stops
    assert run.cursor.k == len(run.table) - 1 and not player.playing
    player.speed = 500.0
    player.faster()
    assert player.speed == 2000.0
    player.slower()
    player.slower()
    assert player.speed == 100.0


def test_space_pauses_and_resumes_following_a_live_stream() -> None:
    run = live_run_with_events()
    assert run.live is not None
    run.cursor.home()
    player = Player(Leading(run), speed=10.0)
    player.toggle()
    assert not run.live.following and not player.playing
    player.toggle()
    assert run.live.following and run.cursor.k == len(run.table) - 1


def test_the_exports_frames_are_built_without_a_ui() -> None:
    run = Run(trace_run().opening).load_all()
    listed = list(run.table.dispatches)
    data = log_frame(ListedRows.of(run.table, listed))
    assert data.height == len(listed) and set(data["kind"]) == {"dispatch"}
    assert data.columns[:6] == ["seq", "t", "kind", "user", "cost", "v"]
    run.cursor.end()
    shares = shares_frame(run.table, run.state())
    assert shares["charged"].sum() == pytest.approx(run.state().charged_total)
    code = "import sys, sfqtui.runs.export_frames; print('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip() == "False"
