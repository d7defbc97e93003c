"""The replay dashboard: step a scheduler event by event and see why each request went when it did."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, ProgressBar
from textual.worker import get_current_worker

from sfqtui.core.analysis.log_calibration import estimator_label
from sfqtui.core.engine.estimator import EstimatorParams
from sfqtui.core.log.lockstep import MODES, Mode, follow, mode_of
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.log.shadow import Shadow, ShadowMismatch
from sfqtui.core.numbers import count
from sfqtui.core.schedulers import REGISTRY
from sfqtui.live.bound import recorded_bound
from sfqtui.runs.opening import Opening, rerunnable
from sfqtui.runs.protocols import RunOpening
from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import Lesson
from sfqtui.ui.ask import Ask
from sfqtui.ui.calibration_view import CalibrationScreen, estimator_twin
from sfqtui.ui.clicks import EventClicked, UserClicked
from sfqtui.ui.event_log import EventLog, EventLogHeader, header_for
from sfqtui.ui.explain_panel import ExplainPanel
from sfqtui.ui.frame import Frame, ViewOptions
from sfqtui.ui.help import KeysHelp
from sfqtui.ui.lesson import LessonPanel
from sfqtui.ui.loading import ShadowWarmed
from sfqtui.ui.meter_band import SORTS, MeterBand, MeterHeader
from sfqtui.ui.palette import palette_commands
from sfqtui.ui.run_pane import RunPane
from sfqtui.ui.runs_app import CHART_EVERY_S, RunsApp
from sfqtui.ui.search import LogSearch, closest_users
from sfqtui.ui.shares import SharesPanel
from sfqtui.ui.side_by_side import SideBySide
from sfqtui.ui.status_line import StatusLine
from sfqtui.ui.teacher import Teacher

BACK_TO_LESSONS = "lessons"  # what the dashboard of a lesson returns when escape leaves it for the menu
SPEEDS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 500.0, 2000.0, 10000.0)
TICKS_PER_S = 20
LOG_MOUSE = "click: go to a row · a name: only that user"
STEP, DISPATCH, SPEED = Binding.Group("Step"), Binding.Group("Dispatch"), Binding.Group("Speed")
INDEX_STEP = 16_384  # events a replica-indexing worker takes at a time (the screen waits at most that long for it)
W = TypeVar("W", bound=Widget)


class SfqApp(RunsApp):
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
        super().__init__(list(opening) if isinstance(opening, Sequence) else [opening], autoplay)
        self.lockstep: Mode = mode_of(lockstep)
        self.speed = speed
        self.playing = False
        self._carry = 0.0
        self.teacher = Teacher()
        self.lesson = lesson
        self.options = ViewOptions()
        self._remeasured = False  # a redraw after views were resized is already due
        self.search = LogSearch()

    # Layout

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        if self.lesson is not None:
            yield LessonPanel(self.lesson, id="lesson")
        if self.side_by_side:
            yield SideBySide(self.runs, id="side-by-side")
        else:
            with Horizontal(id="top"):
                with _titled(Vertical(id="band-box"), "meters"):
                    yield MeterHeader(id="band-header")
                    yield MeterBand(id="band")
                yield _titled(ExplainPanel(id="explain"), "why")
            with Horizontal(id="bottom"):
                with _titled(Vertical(id="log-box"), "event log", LOG_MOUSE):
                    header = EventLogHeader(header_for(self.table), id="log-header")
                    yield header
                    yield EventLog(header, id="log")
                yield _titled(SharesPanel(id="shares"), "cost shares")
        yield ProgressBar(total=1.0, show_eta=False, id="progress")
        yield Footer()

    def on_mount(self) -> None:
        self._timer = self.set_interval(1 / TICKS_PER_S, self._tick, pause=True)
        self.set_interval(CHART_EVERY_S, self._chart_growing_runs)
        # The leading run loads first, so its events are on screen as soon as they can be;
        # the others start once it has shown some (or could not open).
        self._start_loading(self.current)
        if self.lesson is not None and isinstance(self.current.opening, Opening):
            self._measure_outcome(self.lesson, self.current.opening.path)

    def run_loaded(self, run: Run) -> None:
        if self.side_by_side and self.teacher.follows(run):
            self.works_for(run, self._warm_shadow(run))
        replicas = run.replicas
        if replicas is not None:
            self.works_for(run, self._index_replicas(run, replicas))

    @work(thread=True, group="replicas", exit_on_error=False, description="indexing each replica's events")
    def _index_replicas(self, run: Run, replicas: ReplicaStates) -> None:
        """Index every replica's events and take their checkpoints through the whole log, a
        step at a time, so that a far jump on the screen finds them done."""
        worker = get_current_worker()
        for upto in range(0, len(run.table), INDEX_STEP):
            if worker.is_cancelled or run not in self.runs:
                return
            replicas.extend(upto + INDEX_STEP - 1)

    @work(thread=True, group="shadow", exit_on_error=False, description="following the scheduler's state")
    def _warm_shadow(self, run: Run) -> None:
        """Drive a shadow of the run's scheduler through its whole log, so that the pane's
        first far jump takes its copies instead of re-driving the log from the start."""
        worker = get_current_worker()
        try:
            warmed = self.teacher.warmed(run, lambda: worker.is_cancelled or run not in self.runs)
        except ShadowMismatch as mismatch:
            self.post_message(ShadowWarmed(run.key, None, mismatch))
            return
        if warmed is not None:
            self.post_message(ShadowWarmed(run.key, warmed))

    def on_shadow_warmed(self, message: ShadowWarmed) -> None:
        run = self._run(message)
        if run is None:
            return
        if message.mismatch is not None:
            self.teacher.refuse(run, message.mismatch)
            self.refresh_views()
        elif message.shadow is not None:
            self.teacher.adopt(run, message.shadow)

    # Drawing

    def frame(self) -> Frame:
        return self.frame_of(self.current)

    def frame_of(self, run: Run) -> Frame:
        return Frame(
            table=run.table,
            state=run.state(),
            k=run.cursor.k,
            title=run.title,
            slots=run.slots,
            loaded=run.loaded,
            loading=run.loading,
            playing=self.playing or (run.loaded is None and run.following),
            connection=self.link_of(run),
            speed=self.speed,
            options=self.options,
            replicas=run.replicas,
            bound=run.bound if run.link is not None else recorded_bound(run.metadata, run.table.t[run.cursor.k] if run.cursor.k >= 0 else None),
        )

    def refresh_views(self) -> None:
        if not self.screen_stack:  # closing: a late message has nothing to draw on
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

    def _moved(self, k: int | None, nothing: str) -> None:
        if k is None:
            self.notify(nothing, timeout=3)
        self.current.following = self.cursor.k == len(self.table) - 1  # a live run follows the tail only from there
        self._follow()
        self.refresh_views()

    def _follow(self) -> None:
        """Put the other runs at the leading run's moment."""
        follow(self.cursor, [run.cursor for run in self.runs[1:]], self.lockstep)

    # Actions

    def action_step(self, n: int) -> None:
        self._moved(self.cursor.step(n), "no more events" if n > 0 else "at the start")

    def action_next_dispatch(self) -> None:
        self._moved(self.cursor.next_dispatch(), "no later dispatch")

    def action_previous_dispatch(self) -> None:
        self._moved(self.cursor.previous_dispatch(), "no earlier dispatch")

    def action_home(self) -> None:
        self._moved(self.cursor.home(), "")

    def action_end(self) -> None:
        self._moved(self.cursor.end(), "")

    def action_next_idle_reset(self) -> None:
        self._moved(self.cursor.next_idle_reset(), "no later idle reset")

    def action_next_violation(self) -> None:
        run = self.current
        if not run.checked:
            traits = REGISTRY.get(run.scheduler)
            if run.audit_failure:
                why = f"the log could not be checked: {run.audit_failure}"
            elif run.loading or (traits is not None and traits.audit is not None):
                why = "still checking the log"
            else:
                why = "no invariants to check for this scheduler"
            self.notify(why, timeout=3)
            return
        self._moved(self.cursor.next_violation(), "no later invariant violation")
        for v in run.broken.get(self.cursor.k, ()) if self.cursor.k >= 0 else ():
            self.notify(v.message, title=f"seq {v.seq:,} breaks {v.rule}", severity="warning", timeout=10)

    def action_toggle_play(self) -> None:
        if self.current.loaded is None:  # a live stream: space pauses and resumes following it
            self.current.following = not self.current.following
            if self.current.following:
                self.cursor.end()
            self.refresh_views()
            return
        self.playing = not self.playing
        self._carry = 0.0
        if self.playing:
            self._timer.resume()
        else:
            self._timer.pause()
        self.refresh_views()

    def _tick(self) -> None:
        self._carry += self.speed / TICKS_PER_S
        steps = int(self._carry)
        if steps:
            self._carry -= steps
            moved = self.cursor.step(steps)
            if moved is None and not self.current.loading:
                self.action_toggle_play()
                return
            self._follow()
            self.refresh_views()

    def _set_speed(self, direction: int) -> None:
        faster = [s for s in SPEEDS if (s > self.speed if direction > 0 else s < self.speed)]
        if faster:
            self.speed = faster[0] if direction > 0 else faster[-1]
        self.refresh_views()

    def action_faster(self) -> None:
        self._set_speed(+1)

    def action_slower(self) -> None:
        self._set_speed(-1)

    def action_goto(self) -> None:
        def go(answer: str | None) -> None:
            if answer:
                self._moved(self.cursor.goto(answer), self.cursor.not_found(answer))

        self.push_screen(Ask("Go to an event number (1234), a time (12.5s or t=12.5) or a request id:"), go)

    def _current_user(self) -> str:
        k = self.cursor.k
        return (self.table.user_name(k) or "") if k >= 0 else ""

    def action_until_user(self) -> None:
        def go(answer: str | None) -> None:
            if answer:
                self._moved(self.cursor.next_dispatch_of(answer.strip()), f"no later dispatch of {answer.strip()!r}")

        self.push_screen(Ask("Run until the next dispatch of user:", self._current_user(), self.table.users), go)

    def _use_options(self, options: ViewOptions) -> None:
        """Change what the views list or how they order it, in every pane alike."""
        self.options = options
        self.refresh_views()

    def action_filter_user(self) -> None:
        """Like the search, the prompt opens empty (the filter in force shows in it, greyed): Enter on it shows everyone."""
        def go(answer: str | None) -> None:
            if answer is not None:
                self._filter(answer.strip() or None)

        now = f"now: {self.options.user_filter or 'everyone'}"
        self.push_screen(Ask("Show the events of user (empty: everyone):", "", self.table.users, now), go)

    def _filter(self, user: str | None) -> None:
        """List only ``user``'s events in every log (None: everyone's). A user who is not in
        the log leaves the filter as it was, and the closest names are offered."""
        if user is not None and user not in self.table.user_code:
            closest = closest_users(self.table, user)
            offer = f"; did you mean {' or '.join(closest)}?" if closest else ""
            self.notify(f"no user {user!r} in this log{offer} The log still shows {self._listed()}.", title="filter unchanged",
                        severity="warning", timeout=8)
            return
        self._use_options(replace(self.options, user_filter=user))

    def _listed(self) -> str:
        """What the logs list, in words."""
        return self.options.log_description or "all events"

    def on_user_clicked(self, message: UserClicked) -> None:
        """A click on a user shows only that user's events; on the same user again, everyone's."""
        self._filter(None if self.options.user_filter == message.user else message.user)

    def on_event_clicked(self, message: EventClicked) -> None:
        """A click on an event row puts the cursor there (in a pane that follows, the leader
        goes to the same moment); on the row's user, it also filters by that user."""
        pane = next((node for node in message.view.ancestors_with_self if isinstance(node, RunPane)), None)
        run = next((r for r in self.runs if pane is not None and r.key == pane.run_key), self.current)
        run.cursor.at_event(message.k)
        if run is not self.current:
            follow(run.cursor, [self.cursor], self.lockstep)
        self._moved(self.cursor.k, "")
        if message.user is not None:
            self.on_user_clicked(UserClicked(message.view, message.user))

    def action_search(self) -> None:
        def go(answer: str | None) -> None:
            if answer is None:
                return
            self.search.text = answer.strip()
            for log in self.main.query(EventLog):
                log.mark(self.search.text)
            if self.search.text:
                self._search_step(+1)
            else:
                self._say_found("")
                self.refresh_views()

        now = f"now: {self.search.text}" if self.search.text else "no search now"
        self.push_screen(Ask("Search request ids and users (then N: next match, P: previous; empty: no search):", "", None, now), go)

    def action_next_match(self) -> None:
        self._search_step(+1)

    def action_previous_match(self) -> None:
        self._search_step(-1)

    def _search_step(self, direction: int) -> None:
        text = self.search.text
        if not text:
            self.notify("no search yet: / searches request ids and users", timeout=3)
            return
        log = self.main.query(EventLog).first()  # the leading run's
        found = self.search.step(self.table, log.listed, self.cursor.k, direction)
        if found is None:
            self._say_found(f"/{text}: no match")
            self.notify(f"no request id or user in {self._listed()} contains {text!r}", timeout=4)
            self.refresh_views()
            return
        wrapped = (" (from the start)" if direction > 0 else " (from the end)") if found.wrapped else ""
        self._say_found(f"/{text}: match {found.position:,} of {found.count:,}{wrapped} · N next, P previous")
        self._moved(self.cursor.at_event(found.k), "")

    def _say_found(self, said: str) -> None:
        """Where a search stands, on the border under the leading log (its mouse keys when no search is on)."""
        box = self.main.query(EventLog).first().parent
        if isinstance(box, Widget):
            box.border_subtitle = said or (LOG_MOUSE if box.id == "log-box" else "")

    def action_toggle_dispatches(self) -> None:
        self._use_options(replace(self.options, dispatches_only=not self.options.dispatches_only))

    def action_cycle_sort(self) -> None:
        self._use_options(replace(self.options, sort=SORTS[(SORTS.index(self.options.sort) + 1) % len(SORTS)]))

    def action_toggle_folded(self) -> None:
        self._use_options(replace(self.options, show_folded=not self.options.show_folded))

    def action_cycle_replica(self) -> None:
        """Show every replica, then replica 0, 1, ... alone (a run of several replicas)."""
        count = max((run.replicas.count for run in self.runs if run.replicas is not None), default=0)
        if not count:
            self.notify("one balancer: no replicas to choose (replay with --replicas K, or open a replicated log)", timeout=3)
            return
        chosen = self.options.replica
        following = 0 if chosen is None else chosen + 1
        self._use_options(replace(self.options, replica=following if following < count else None))

    def action_toggle_lockstep(self) -> None:
        """Step the runs side by side together by time, or by dispatch number."""
        if not self.side_by_side:
            self.notify("one pane: nothing to step in lockstep with (the palette's \"Compare with ...\" adds a pane)", timeout=3)
            return
        self.lockstep = MODES[(MODES.index(self.lockstep) + 1) % len(MODES)]
        self.notify(f"lockstep by {self.lockstep}", timeout=2)
        self._moved(self.cursor.k, "")

    async def _relayout(self) -> None:
        """Compose the dashboard again for another set of runs (recompose rebuilds the
        screen on top, so any view or question over the dashboard is closed first). The new
        Footer lists the keys only once the screen says its bindings changed: it is told."""
        while len(self.screen_stack) > 1:
            await self.pop_screen()
        await self.recompose()
        self.main.refresh_bindings()
        progress = self.main.query_one("#progress", ProgressBar)
        progress.update(progress=self.current.loaded or 0.0)
        progress.set_class(not self.current.loading, "-done")

    async def _add_run(self, opening: Opening) -> None:
        run = Run(opening, title=self.current.title)
        self.runs.append(run)
        await self._relayout()
        self._start_loading(run)

    async def compare_with(self, scheduler: str) -> None:
        """Add a pane: the leading run's trace replayed under another scheduler."""
        opening = self._rerunnable()
        if opening is not None:
            await self._add_run(opening.rerun(scheduler=scheduler))

    async def compare_estimator(self, estimator: EstimatorParams) -> None:
        """Add a pane: the leading run's trace replayed with another estimator; the calibration view then compares them."""
        opening = self._rerunnable()
        if opening is not None:
            await self._add_run(opening.rerun(estimator=estimator))
            self.action_calibration()

    def _rerunnable(self) -> Opening | None:
        """The leading run's trace, or None (said on screen) for a saved log or a live stream."""
        opening = rerunnable(self.opening)
        if opening is None:
            self.notify("a saved log cannot be re-run; open its trace instead", severity="warning")
        return opening

    def action_calibration(self) -> None:
        self.push_screen(CalibrationScreen(self.current, estimator_twin(self.current, self.runs)))

    async def drop_pane(self, key: int) -> None:
        self.runs = [run for run in self.runs if run.key != key] or self.runs
        await self._relayout()
        self.refresh_views()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "lesson_menu":
            return self.lesson is not None
        if action == "earlier_proxy_run":  # proxy runs are a live stream's
            return self.live_run() is not None
        return True

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

    def rerun(self, **changes: object) -> None:
        """Replay the same trace with another scheduler, slot count or estimator."""
        opening = self._rerunnable()
        if opening is None:
            return
        was = self.cursor.k
        self.runs[0] = Run(opening.rerun(**changes), title=self.current.title)
        if self.side_by_side:
            self.call_later(self._relayout)  # the leading pane draws another run now
        self._start_loading(self.current)
        said = {k: estimator_label(v.as_dict()) if isinstance(v, EstimatorParams) else count(v) if isinstance(v, int) else v
                for k, v in changes.items()}
        self.notify(f"re-running: {', '.join(f'{k}={v}' for k, v in said.items())} (the cursor was at seq {count(was)})", timeout=4)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's "Screenshot" saves where the terminal's driver decides; ours asks and says where
        yield from (command for command in super().get_system_commands(screen) if command.title != "Screenshot")
        yield from palette_commands(self)


def _titled(widget: W, title: str, subtitle: str = "") -> W:
    widget.border_title = title
    widget.border_subtitle = subtitle
    return widget


def run_dashboard(opening: RunOpening | Sequence[RunOpening], speed: float = 10.0, autoplay: bool = False, lockstep: str = "time",
                  lesson: Lesson | None = None) -> str | None:
    """Run the dashboard until it quits; BACK_TO_LESSONS when a lesson was left for the menu."""
    return SfqApp(opening, speed=speed, autoplay=autoplay, lockstep=lockstep, lesson=lesson).run()
