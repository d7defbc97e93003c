"""The calibration view: is the cost estimator right, and whom do its errors favour?

Rebuilt from the run's log (semantics §10, core/analysis/log_calibration.py): charged vs
actual cost per user with bias, the learned ratio over time, actual vs estimated output
as a histogram and, when another run replays the same trace with another estimator, how
many dispatch positions changed and who moved up or down. The measures run on a worker
that posts them; while a log is still loading, or a live stream goes on, they are taken
again every few seconds. A live stream does not say its estimator's settings: the view
then measures what the stream carries, estimated against actual output tokens per user,
over the requests completed so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker

from sfqtui.core.analysis.log_calibration import OUTPUT_BIN_LABELS, LogCalibration, OrderChange, calibrate_log, estimator_label, order_change
from sfqtui.core.numbers import Fixed, amount, count, percent, ratio, seconds
from sfqtui.core.pricing.estimator import SCOPES, UPDATES, EstimatorParams
from sfqtui.runs.opening import rerunnable
from sfqtui.runs.run import Run
from sfqtui.ui.loading.open_runs import ReportsWorkers
from sfqtui.ui.widgets.columns import grid
from sfqtui.ui.widgets.text_view import TextView

RATIO_BINS = 60  # one chart column per time bin
SHOWN_USERS = 12
SHOWN_RATIOS = 8
SHOWN_MOVES = 6  # who moved up most and down most
BAR_WIDTH = 16
REMEASURE_S = 2.0
SPARKS = "▁▂▃▄▅▆▇█"
EIGHTHS = " ▏▎▍▌▋▊▉█"


def estimator_choices(current: EstimatorParams) -> list[tuple[str, EstimatorParams]]:
    """The estimators the palette offers to compare with: every other ratio scope and
    update rule, and the oracle."""
    base = replace(current, oracle=False)
    choices = [(f"ratio {'global' if s == 'global' else 'per ' + s}", replace(base, scope=s)) for s in SCOPES]
    choices += [(f"update {u}", replace(base, update=u)) for u in UPDATES]
    choices.append(("oracle", replace(current, oracle=True)))
    return [(title, params) for title, params in choices if params != current]


def estimator_twin(run: Run, runs: Sequence[Run]) -> Run | None:
    """The latest of ``runs`` that replays the same trace as ``run`` with the same settings
    but the estimator."""
    mine = rerunnable(run.opening)
    if mine is None:  # a saved log or a live stream: its settings are not an opening's
        return None
    for other in reversed(runs):
        theirs = rerunnable(other.opening)
        if (other is not run and theirs is not None and theirs.config.estimator != mine.config.estimator
                and replace(theirs, config=replace(theirs.config, estimator=mine.config.estimator, reprice=mine.config.reprice)) == mine):
            return other
    return None


class CalibrationMeasured(Message):
    """The measures of the run (or why there are none), and its order against the twin."""

    def __init__(self, measures: LogCalibration | str, change: OrderChange | None) -> None:
        super().__init__()
        self.measures, self.change = measures, change


class CalibrationText(TextView, can_focus=True):
    DEFAULT_CSS = "CalibrationText { height: 1fr; padding: 0 1; }"


class CalibrationScreen(Screen[None]):
    BINDINGS = [Binding("escape,c", "app.pop_screen", "Close")]

    def __init__(self, run: Run, twin: Run | None = None) -> None:
        super().__init__()
        self.run, self.twin = run, twin
        self.measured = False  # the figures on screen are final (every log they read is loaded)

    def compose(self) -> ComposeResult:
        yield CalibrationText()

    def on_mount(self) -> None:
        self.query_one(CalibrationText).set_text([self._title(), Text("measuring…", "dim")])
        self._measure()

    @property
    def _loading(self) -> bool:
        return self.run.loading or (self.twin is not None and self.twin.loading)

    @work(thread=True, exclusive=True, group="calibration", exit_on_error=False, description="measuring the calibration")
    def _measure(self) -> None:
        try:
            measures: LogCalibration | str = calibrate_log(self.run.table, self.run.metadata, bins=RATIO_BINS)
        except ValueError as exc:
            measures = str(exc)
        change = order_change(self.run.table, self.twin.table) if self.twin is not None else None
        self.post_message(CalibrationMeasured(measures, change))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if isinstance(self.app, ReportsWorkers):  # a screen's workers report to it: the app's one handler says what failed
            self.app.on_worker_state_changed(event)

    def on_calibration_measured(self, message: CalibrationMeasured) -> None:
        measures = message.measures
        lines = [self._title()]
        live = self.run.loaded is None
        if isinstance(measures, str):
            so_far = "the stream goes on: measured again every few seconds" if live else "the log is still loading"
            lines.append(Text(f"{measures} (so far: {so_far})", "dim") if self.run.loading else Text(measures, "bold"))
        else:
            lines += _measures_lines(measures, self.run.loading, live)
            twin = rerunnable(self.twin.opening) if self.twin is not None else None  # estimator_twin found a trace
            if self.twin is not None and twin is not None and message.change is not None:
                lines += _order_lines(message.change, estimator_label(measures.estimator),
                                      estimator_label(twin.config.estimator.as_dict()), self.twin.loading)
        self.query_one(CalibrationText).set_text(lines)
        self.measured = not self._loading
        if self._loading:
            self.set_timer(REMEASURE_S, self._measure)

    def _title(self) -> Text:
        keys = "escape or c closes" + ("; ctrl+p: compare another estimator" if self.run.opening.can_rerun else "")
        return Text.assemble(("calibration of ", "bold"), self.run.title, (f"   {keys}", "dim"), no_wrap=True, overflow="ellipsis")


def _measures_lines(m: LogCalibration, loading: bool, live: bool) -> list[Text]:
    settings = m.estimator
    so_far = " so far (more as the stream goes on)" if live else " loaded so far" if loading else ""
    unmeasured = f"; {m.unmeasured:,} {'still running or ' if live else ''}without an actual output, left out" if m.unmeasured else ""
    if not settings:
        said = Text(f"estimator: settings not recorded{' (a live stream does not send them)' if live else ''}, so charges cannot be "
                    f"turned into costs: measured on output tokens, estimated vs actual; {m.dispatches:,} dispatches{so_far}{unmeasured}")
    else:
        weights = "" if settings.get("oracle") else f" (a = {amount(settings.get('input_weight'))}, b = {amount(settings.get('output_weight'))})"
        said = Text(f"estimator: {estimator_label(settings)}{weights}; {m.dispatches:,} dispatches{so_far}{unmeasured}")
    return [said, Text(), *_user_lines(m), Text(), *_ratio_lines(m), Text(), *_histogram_lines(m)]


def _user_lines(m: LogCalibration) -> list[Text]:
    shown = m.users[:SHOWN_USERS]
    cost = Fixed.of([x for u in shown for x in (u.charged, u.actual)])
    gain = Fixed(1, sign=True)
    rows = [((u.user, count(u.dispatched), cost(u.charged), cost(u.actual), ratio(u.bias),
              percent(u.share_charged), percent(u.share_actual), gain(u.share_gain * 100)), "")
            for u in shown]
    if m.unit == "cost":
        title, columns = "charged vs actual cost per user", ("dispatches", "charged", "actual", "bias", "charged %", "actual %", "gain pp")
    else:
        title, columns = "estimated vs actual output tokens per user", ("completed", "estimated", "actual", "bias", "est. %", "actual %", "gain pp")
    over = "overcharged" if m.unit == "cost" else "overestimated"
    lines = [Text(f"{title}, worst bias first (bias > 1: {over}; gain: actual % − {columns[1]} %)", "bold"),
             *grid(("user", *(f"  {h}" for h in columns)), rows, (False, *[True] * 7))]
    if len(m.users) > SHOWN_USERS:
        lines.append(Text(f"… {len(m.users) - SHOWN_USERS:,} more users", "dim"))
    return lines


def _ratio_lines(m: LogCalibration) -> list[Text]:
    title = Text("learned output ratio: the mean that priced the dispatches of each time bin", "bold")
    if not m.ratios:
        return [title, Text("no ratio priced any dispatch (the oracle, or no request has max_tokens)", "dim")]
    shown = m.ratios[:SHOWN_RATIOS]
    top = max([x for s in shown for x in s.means if x is not None] + [s.ideal for s in shown if s.ideal is not None]) or 1.0
    lines = [title, Text(f"t {seconds(m.edges[0])} .. {seconds(m.edges[-1])} s; height 0 .. {ratio(top, 3)}; "
                         "ideal: sum of output / sum of max_tokens over the key's dispatches", "dim")]
    if m.ratio_scope == "model":
        lines.append(Text("scope model: the log has no model column, so all models' ratios are charted together", "dim"))
    elif m.ratio_scope == "unknown":
        lines.append(Text("the ratio's scope is not recorded, so all users' ratios are charted together", "dim"))
    width = max(len(s.key) for s in shown)
    for s in shown:
        ideal = ratio(s.ideal, 3)
        lines.append(Text.assemble(s.key.ljust(width), " ", (_sparkline(s.means, top), "cyan"), f"  ideal {ideal}", no_wrap=True,
                                   overflow="ellipsis"))
    if len(m.ratios) > SHOWN_RATIOS:
        lines.append(Text(f"… {len(m.ratios) - SHOWN_RATIOS:,} more keys", "dim"))
    return lines


def _sparkline(values: list[float | None], top: float) -> str:
    """A character per value, its height scaled to ``top``; blank where there is none."""
    levels = len(SPARKS)
    return "".join(" " if x is None else SPARKS[min(levels - 1, int(x / top * levels))] for x in values)


def _histogram_lines(m: LogCalibration) -> list[Text]:
    columns = {"all users": m.output_bins, **m.user_output_bins}
    cells = {name: _bars(counts) for name, counts in columns.items()}
    rows = [((label, *(cells[name][j] for name in columns)), "") for j, label in enumerate(OUTPUT_BIN_LABELS)]
    return [Text("actual / estimated output tokens: dispatches per bin (1: the estimate was right; the most biased users beside)", "bold"),
            *grid(("actual/est", *columns), rows, [False] * (len(columns) + 1))]


def _bars(counts: list[int]) -> list[str]:
    """A bar per count, the largest BAR_WIDTH cells long, in eighths of a cell, then the count."""
    top = max(counts) or 1
    width = max(6, len(count(top)))
    bars = []
    for n in counts:
        eighths = round(n / top * BAR_WIDTH * 8)
        bar = "█" * (eighths // 8) + (EIGHTHS[eighths % 8] if eighths % 8 else "")
        bars.append(f"{bar.ljust(BAR_WIDTH)} {count(n):>{width}}")
    return bars


def _order_lines(change: OrderChange, this: str, other: str, loading: bool) -> list[Text]:
    so_far = " so far" if loading else ""
    lines = [Text(), Text(f"against {other}", "bold")]
    if not change.compared:
        return lines + [Text("measuring… (its replay has not dispatched anything yet)", "dim")]
    first = f", the first at dispatch #{change.first + 1:,}" if change.first is not None else ""
    lines += [Text(f"{change.changed:,} of {change.compared:,} dispatch positions changed{so_far}{first}"),
              Text(f"who moved, against {this} (mean change per request; position: − earlier, + later)")]
    moves = change.moves
    shown = moves if len(moves) <= 2 * SHOWN_MOVES else [*moves[:SHOWN_MOVES], *moves[-SHOWN_MOVES:]]
    position, wait = Fixed(1, sign=True), Fixed(2, sign=True)
    rows = [((m.user, count(m.requests), position(m.position), f"{wait(m.wait)} s",
              "moved up" if m.position < 0 else "moved down" if m.position > 0 else "stayed"),
             "green" if m.position < 0 else "red" if m.position > 0 else "") for m in shown]
    lines += grid(("user", "  requests", "  position", "  wait", ""), rows, (False, True, True, True, False))
    if len(shown) < len(moves):
        lines.append(Text(f"(the {SHOWN_MOVES} who moved up most and down most of {len(moves):,} users)", "dim"))
    return lines
