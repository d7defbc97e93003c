"""The replay dashboard: step a scheduler event by event and see why each request went when it did."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import ProgressBar
from textual.worker import Worker

from sfqtui.core.log.cursor import Cursor
from sfqtui.core.log.lockstep import MODES, Mode, follow, mode_of
from sfqtui.core.log.shadow import Shadow, ShadowMismatch
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import Timeline
from sfqtui.runs.opening import Opening
from sfqtui.runs.protocols import RunOpening
from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import Lesson
from sfqtui.ui.commands.palette import palette_commands
from sfqtui.ui.commands.reruns import Reruns
from sfqtui.ui.frame import Frame, ViewOptions
from sfqtui.ui.layout import dashboard
from sfqtui.ui.loading.messages import OutcomeMeasured, RunMessage
from sfqtui.ui.loading.open_runs import OpenRuns
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.log_keys import LogKeys
from sfqtui.ui.panes.meter_band import SORTS, MeterBand, MeterHeader
from sfqtui.ui.panes.shares import EngineFigures, SharesPanel
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.player import TICKS_PER_S, Player
from sfqtui.ui.screens.calibration_view import CalibrationScreen, estimator_twin
from sfqtui.ui.screens.help import KeysHelp
from sfqtui.ui.side_by_side.lesson import LessonPanel
from sfqtui.ui.side_by_side.run_pane import RunPane
from sfqtui.ui.side_by_side.teacher import Teacher
from sfqtui.ui.side_by_side.view import SideBySide
from sfqtui.ui.stream.connection import WaitingForEvents
from sfqtui.ui.widgets.ask import Ask
from sfqtui.ui.widgets.clicks import EventClicked, UserClicked

BACK_TO_LESSONS = "lessons"  # what the dashboard of a lesson returns when escape leaves it for the menu
CHART_EVERY_S = 2.0  # while a log grows, the shares chart is binned again this often
STEP, DISPATCH, SPEED = Binding.Group("Step"), Binding.Group("Dispatch"), Binding.Group("Speed")


class SfqApp(App[str]):
    """The dashboard: its views and keys. It holds the runs and their loading (``OpenRuns``,
    to which it hands every run message) and the log's filter and search keys (``LogKeys``)."""

    TITLE = "sfqtui"
    CSS_PATH = Path(__file__).with_name("app.tcss")
    BINDINGS = [
        # the footer shows a group's keys under one word
        Binding("right", "step(1)", "Step", group=STEP),
        Binding("left", "step(-1)", "Back", group=STEP),
        Binding("n,shift+right", "next_dispatch", "Next dispatch", group=DISPATCH),
        Binding("p,shift+left", "previous_dispatch", "Prev dispatch", group=DISPATCH),
        Binding("space", "toggle_play", "Play/pause"),
        Binding("plus,equals_sign,right_square_bracket", "faster", "Faster", group=SPEED),
        Binding("minus,left_square_bracket", "slower", "Slower", group=SPEED),
        Binding("home", "home", "Start", show=False),
        Binding("end", "end", "End", show=False),
        Binding("g", "goto", "Go to"),
        Binding("slash", "search", "Search"),
        Binding("N", "next_match", "Next match", show=False),
        Binding("P", "previous_match", "Prev match", show=False),
        Binding("u", "until_user", "Until user", show=False),
        Binding("r", "next_idle_reset", "Idle reset"),
        Binding("x", "next_violation", "Next violation", show=False),
        Binding("d", "toggle_dispatches", "Dispatches only", show=False),
        Binding("f", "filter_user", "Filter by user", show=False),
        Binding("o", "cycle_sort", "Sort meters", show=False),
        Binding("a", "toggle_folded", "Show idle users", show=False),
        Binding("l", "toggle_lockstep", "Lockstep by time or dispatch", show=False),
        Binding("k", "cycle_replica", "One replica or all", show=False),
        Binding("c", "calibration", "Calibration view", show=False),
        Binding("e", "earlier_proxy_run", "Earlier proxy run", show=False),
        Binding("question_mark", "toggle_help", "Help"),
        Binding("escape", "lesson_menu", "Lessons"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, opening: RunOpening | Sequence[RunOpening], speed: float = 10.0, autoplay: bool = False, lockstep: str = "time",
                 lesson: Lesson | None = None) -> None:
        super().__init__()
        self.teacher = Teacher()
        self.open_runs = OpenRuns(self, list(opening) if isinstance(opening, Sequence) else [opening], self.teacher, autoplay)
        self.lockstep: Mode = mode_of(lockstep)
        self.player = Player(self, speed)
        self.lesson = lesson
        self.options = ViewOptions()
        self._remeasured = False  # a redraw after views were resized is already due
        self.log_keys = LogKeys(self)
        self.reruns = Reruns(self)

    # The runs (the first is the one the keys move)

    @property
    def runs(self) -> list[Run]:
        return self.open_runs.runs

    @property
    def current(self) -> Run:
        return self.open_runs.current

    @property
    def opening(self) -> RunOpening:
        return self.current.opening

    @property
    def table(self) -> EventTable:
        return self.current.table

    @property
    def timeline(self) -> Timeline:
        return self.current.timeline

    @property
    def cursor(self) -> Cursor:
        return self.current.cursor

    @property
    def loading(self) -> bool:
        """True until every run's log is loaded (or loading failed)."""
        return any(run.loading for run in self.runs)

    @property
    def checked(self) -> bool:
        """True once the current run's log has been audited for invariant violations."""
        return self.current.checked

    @property
    def side_by_side(self) -> bool:
        return self.open_runs.side_by_side

    @property
    def main(self) -> Screen:
        """The dashboard's own screen, also while a question or the help is shown over it."""
        return self.screen_stack[0]

    # Layout

    def compose(self) -> ComposeResult:
        yield from dashboard(self.runs, self.lesson)

    def on_mount(self) -> None:
        self.player.timer = self.set_interval(1 / TICKS_PER_S, self.player.tick, pause=True)
        self.set_interval(CHART_EVERY_S, self.open_runs.chart_growing)
        self.set_interval(1.0, self.open_runs.tick)
        self.open_runs.start(self.current)  # the others start once it has shown some events (or could not open)
        if self.lesson is not None and isinstance(self.current.opening, Opening):
            self.open_runs.loader.start_outcome(self.lesson, self.current.opening.path)

    def on_unmount(self) -> None:
        self.open_runs.loader.close_sources()

    @on(RunMessage)
    def _take(self, message: RunMessage) -> None:
        self.open_runs.take(message)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.open_runs.worker_changed(event)

    def on_outcome_measured(self, message: OutcomeMeasured) -> None:
        self.main.query_one(LessonPanel).outcome = message.lines
        self.refresh_views()

    # What the runs' loading changes on screen (open_runs.RunsScreen)

    @property
    def drawing(self) -> bool:
        """False once closing: a late message has nothing to draw on (a test's shutdown runs beside the app's loop)."""
        return bool(self.screen_stack) and self.is_running

    def show_title(self, title: str) -> None:
        self.sub_title = title

    def show_progress(self, fraction: float | None = None, done: bool | None = None) -> None:
        progress = self.main.query_one("#progress", ProgressBar)
        if fraction is not None:
            progress.update(progress=fraction)
        if done is not None:
            progress.set_class(done, "-done")

    def use_table(self, run: Run) -> None:
        self.main.query_one(EventLog).use(run.table)

    def show_chart(self, users: list[int], edges: list[float], series: dict[int, list[float]], engine: EngineFigures = None) -> None:
        for panel in self.main.query(SharesPanel):
            panel.set_chart(users, edges, series, engine)

    def show_waiting(self, text: str | None) -> None:
        WaitingForEvents.show_over(self.main.query_one(EventLog), text)

    def autoplay(self) -> None:
        self.player.toggle()

    # Drawing

    def frame(self) -> Frame:
        return self.frame_of(self.current)

    def leading_log(self) -> EventLog:
        """The leading run's event log (the first pane's, side by side)."""
        return self.main.query(EventLog).first()

    def logs(self) -> list[EventLog]:
        return list(self.main.query(EventLog))

    def frame_of(self, run: Run) -> Frame:
        limits = run.limits
        return Frame(
            table=run.table,
            state=run.state(),
            k=run.cursor.k,
            title=run.title,
            slots=sum(limits.values()) if limits else run.slots,
            loaded=run.loaded,
            loading=run.loading,
            playing=self.player.playing or run.following,
            connection=self.open_runs.link_of(run),
            speed=self.player.speed,
            options=self.options,
            replicas=run.replicas, limits=limits, bound=run.bound(), repriced=bool(run.metadata.get("repriced")),
            capacity_ignored=bool(run.metadata.get("capacity_ignored")),
        )

    def refresh_views(self) -> None:
        if not self.drawing:
            return
        frame = self.frame()
        self.main.query_one(StatusLine).show(frame)
        if self.lesson is not None:
            self.main.query_one(LessonPanel).show(at_end=not self.current.loading and self.cursor.k == len(self.table) - 1)
        if self.side_by_side:
            self.main.query_one(SideBySide).show(self.runs, self.frame_of, self.lockstep, self.teacher.narrate, self.teacher.order)
            return
        band = self.main.query_one(MeterBand)
        band.show(frame)
        self.main.query_one(MeterHeader).show(frame, band.band_layout)
        log_box = self.main.query_one("#log-box")
        title = f"event log: {listed}" if (listed := self.options.log_description) else "event log"
        if log_box.border_title != title:  # setting it repaints the box, even to the same text
            log_box.border_title = title
        self.main.query_one(EventLog).show(frame)
        self._explain(frame)
        self.main.query_one(SharesPanel).show(frame)

    def on_line_view_remeasured(self) -> None:
        """Views were resized (the terminal, the help panel, a new layout): once the screen
        has them at their new sizes, redraw every view, so headers, bands and logs fit."""
        if not self._remeasured:
            self._remeasured = True
            self.call_after_refresh(self._redraw_remeasured)

    def _redraw_remeasured(self) -> None:
        self._remeasured = False
        self.refresh_views()

    def _explain(self, frame: Frame) -> None:
        """The why panel, with DRR's visits told from a shadow of the scheduler when its log can be followed."""
        run, panel = self.current, self.main.query_one(ExplainPanel)
        broken = run.broken.get(frame.k, ())
        shadow: Shadow | None = self.teacher.shadow(run) if self.teacher.follows(run) else None
        try:
            panel.show(frame, self.timeline, shadow, broken)
        except ShadowMismatch as mismatch:
            self.teacher.refuse(run, mismatch)
            panel.show(frame, self.timeline, None, broken)

    def moved(self, k: int | None, nothing: str) -> None:
        """The cursor moved to ``k`` (None: it could not, said in ``nothing``)."""
        if k is None:
            self.notify(nothing, timeout=3)
        self.player.moved()
        self.follow()
        self.refresh_views()

    def follow(self) -> None:
        """Put the other runs at the leading run's moment."""
        follow(self.cursor, [run.cursor for run in self.runs[1:]], self.lockstep)

    # Actions

    def action_step(self, n: int) -> None:
        self.moved(self.cursor.step(n), "no more events" if n > 0 else "at the start")

    def action_next_dispatch(self) -> None:
        self.moved(self.cursor.next_dispatch(), "no later dispatch")

    def action_previous_dispatch(self) -> None:
        self.moved(self.cursor.previous_dispatch(), "no earlier dispatch")

    def action_home(self) -> None:
        self.moved(self.cursor.home(), "")

    def action_end(self) -> None:
        self.moved(self.cursor.end(), "")

    def action_next_idle_reset(self) -> None:
        self.moved(self.cursor.next_idle_reset(), "no later idle reset")

    def action_next_violation(self) -> None:
        run = self.current
        if not run.checked:
            self.notify(run.why_unchecked(), timeout=3)
            return
        self.moved(self.cursor.next_violation(), "no later invariant violation")
        for v in run.broken.get(self.cursor.k, ()) if self.cursor.k >= 0 else ():
            self.notify(v.message, title=f"seq {v.seq:,} breaks {v.rule}", severity="warning", timeout=10)

    def action_toggle_play(self) -> None:
        self.player.toggle()

    def action_faster(self) -> None:
        self.player.faster()

    def action_slower(self) -> None:
        self.player.slower()

    def action_goto(self) -> None:
        def go(answer: str | None) -> None:
            if answer:
                self.moved(self.cursor.goto(answer), self.cursor.not_found(answer))

        self.push_screen(Ask("Go to an event number (1234), a time (12.5s or t=12.5) or a request id:"), go)

    def action_until_user(self) -> None:
        def go(answer: str | None) -> None:
            if answer:
                self.moved(self.cursor.next_dispatch_of(answer.strip()), f"no later dispatch of {answer.strip()!r}")

        self.push_screen(Ask("Run until the next dispatch of user:", self.log_keys.current_user(), self.table.users), go)

    def use_options(self, options: ViewOptions) -> None:
        """Change what the views list or how they order it, in every pane alike."""
        self.options = options
        self.refresh_views()

    def action_filter_user(self) -> None:
        self.log_keys.ask_filter()

    def on_user_clicked(self, message: UserClicked) -> None:
        self.log_keys.user_clicked(message.user)

    def on_event_clicked(self, message: EventClicked) -> None:
        """A click on an event row puts the cursor there (in a pane that follows, the leader
        goes to the same moment); on the row's user, it also filters by that user."""
        pane = next((node for node in message.view.ancestors_with_self if isinstance(node, RunPane)), None)
        run = next((r for r in self.runs if pane is not None and r.key == pane.run_key), self.current)
        run.cursor.at_event(message.k)
        if run is not self.current:
            follow(run.cursor, [self.cursor], self.lockstep)
        self.moved(self.cursor.k, "")
        if message.user is not None:
            self.log_keys.user_clicked(message.user)

    def action_search(self) -> None:
        self.log_keys.ask_search()

    def action_next_match(self) -> None:
        self.log_keys.step(+1)

    def action_previous_match(self) -> None:
        self.log_keys.step(-1)

    def action_toggle_dispatches(self) -> None:
        self.use_options(replace(self.options, dispatches_only=not self.options.dispatches_only))

    def action_cycle_sort(self) -> None:
        self.use_options(replace(self.options, sort=SORTS[(SORTS.index(self.options.sort) + 1) % len(SORTS)]))

    def action_toggle_folded(self) -> None:
        self.use_options(replace(self.options, show_folded=not self.options.show_folded))

    def action_cycle_replica(self) -> None:
        """Show every replica, then replica 0, 1, ... alone (a run of several replicas)."""
        count = max((run.replicas.count for run in self.runs if run.replicas is not None), default=0)
        if not count:
            self.notify("one balancer: no replicas to choose (replay with --replicas K, or open a replicated log)", timeout=3)
            return
        chosen = self.options.replica
        following = 0 if chosen is None else chosen + 1
        self.use_options(replace(self.options, replica=following if following < count else None))

    def action_toggle_lockstep(self) -> None:
        """Step the runs side by side together by time, or by dispatch number."""
        if not self.side_by_side:
            self.notify("one pane: nothing to step in lockstep with (the palette's \"Compare with ...\" adds a pane)", timeout=3)
            return
        self.lockstep = MODES[(MODES.index(self.lockstep) + 1) % len(MODES)]
        self.notify(f"lockstep by {self.lockstep}", timeout=2)
        self.follow()  # the leader stays where it is (and plays on): the others move to its moment
        self.refresh_views()

    async def relayout(self) -> None:
        """Compose the dashboard again for another set of runs (recompose rebuilds the
        screen on top, so any view or question over the dashboard is closed first). The new
        Footer lists the keys only once the screen says its bindings changed: it is told."""
        while len(self.screen_stack) > 1:
            await self.pop_screen()
        await self.recompose()
        self.main.refresh_bindings()
        self.show_progress(self.current.loaded or 0.0, done=not self.current.loading)

    def action_calibration(self) -> None:
        self.push_screen(CalibrationScreen(self.current, estimator_twin(self.current, self.runs)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "lesson_menu":
            return self.lesson is not None
        if action == "earlier_proxy_run":  # proxy runs are a live stream's
            return self.open_runs.live_run() is not None
        return True

    def action_earlier_proxy_run(self) -> None:
        self.open_runs.show_earlier()

    def action_lesson_menu(self) -> None:
        """Leave a lesson for the menu of lessons (sfqtui teach opens it again)."""
        self.exit(BACK_TO_LESSONS)

    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_show_help_panel(self) -> None:
        """The help panel, with the keys in force grouped (help.py); also the palette's "Keys"."""
        if not self.screen.query("HelpPanel"):
            self.screen.mount(KeysHelp())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's "Screenshot" saves where the terminal's driver decides; ours asks and says where
        yield from (command for command in super().get_system_commands(screen) if command.title != "Screenshot")
        yield from palette_commands(self)


def run_dashboard(opening: RunOpening | Sequence[RunOpening], speed: float = 10.0, autoplay: bool = False, lockstep: str = "time",
                  lesson: Lesson | None = None) -> str | None:
    """Run the dashboard until it quits; BACK_TO_LESSONS when a lesson was left for the menu."""
    return SfqApp(opening, speed=speed, autoplay=autoplay, lockstep=lockstep, lesson=lesson).run()
