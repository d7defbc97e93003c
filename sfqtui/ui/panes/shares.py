"""Cost shares: over the run and the current busy period, against the fair share now; in a
run of several replicas, how many of each user's requests went to each replica; for a log that
names where requests were placed, each upstream's (placement.py); for a log
whose engine reported when requests started running, the worst gap at engine start against
the one at dispatch (a proxy's stream without start rows says that it is not available)."""

from __future__ import annotations

from bisect import bisect_right

from rich.color import Color, blend_rgb
from rich.style import Style
from rich.text import Text
from textual.events import Click

from sfqtui.core.analysis.fairness import FairnessReport, Gap
from sfqtui.core.analysis.shares import engine_start_figures, share_series, top_users
from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import amount, count
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.placement import placement_lines
from sfqtui.ui.panes.replicas import routed_lines
from sfqtui.ui.widgets.clicks import UserClicked
from sfqtui.ui.widgets.columns import grid
from sfqtui.ui.widgets.fitted_line import FittedLine
from sfqtui.ui.widgets.text_view import TextView

ROWS = 6
# What the pane says at engine start: the run's figures (fairness.py), None when its log has no start row.
EngineFigures = FairnessReport | None
CHARTED = 3
BARS = "▁▂▃▄▅▆▇█"


def shares_chart(table: EventTable, events: int) -> tuple[list[int], list[float], dict[int, list[float]], FairnessReport | None]:
    """The charted users (the top spenders), bin edges and each one's share per bin, over the
    log's first ``events`` events (on a worker: the table may grow meanwhile), and the
    fairness figures at engine start when those events have start rows."""
    users = top_users(None, table, CHARTED, events)
    edges, series = share_series(table, users, events)
    return users, edges, series, engine_start_figures(table, events)


def _gap(gap: Gap | None) -> str:
    return "none" if gap is None else f"{amount(gap.gap)} {gap.ahead} > {gap.behind}"


def _line(*parts: str | tuple[str, str]) -> Text:
    return Text.assemble(*parts, no_wrap=True, overflow="ellipsis")


def engine_lines(figures: FairnessReport | None, live: bool) -> list[Text]:
    """The run's worst gap at dispatch and at engine start (the chart's events), and the starts
    out of dispatch order; for a live stream without start rows, that the engine reports none."""
    started = None if figures is None else figures.at_engine_start
    if figures is None or started is None:
        return [Text("engine starts: not reported, so no fairness", "dim", no_wrap=True, overflow="ellipsis"),
                Text("at engine start", "dim")] if live else []
    lines = [_line("worst gap at dispatch  ", _gap(figures.worst_gap)),
             _line("      at engine start  ", (_gap(started.worst_gap), "bold"))]
    passing = figures.out_of_dispatch_order
    if passing is not None and passing.pairs:
        lines.append(_line(f"starts out of dispatch order: {count(passing.pairs)}"))
    return lines


class SharesPanel(TextView):
    """The shares table over a chart of the top spenders' shares per time bin, as one view
    (a widget per chart line would cost a frame more to composite)."""

    COMPONENT_CLASSES = {"shares--max-color", "shares--min-color"}
    DEFAULT_CSS = """
    SharesPanel { height: 1fr; }
    SharesPanel > .shares--max-color { color: $primary; }
    SharesPanel > .shares--min-color { color: $primary 30%; }
    """

    HELP = "Click a user to show only that user's events in the log (again: everyone)."

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._edges: list[float] = []
        self._series: dict[int, list[float]] = {}
        self._charted: list[int] = []
        self._chart: list[Text] = []
        self._chart_key: tuple[int, int] | None = None
        self._engine: FairnessReport | None = None
        self._frame: Frame | None = None
        self._user_at: dict[int, int] = {}  # line -> the user code it shows

    def on_click(self, event: Click) -> None:
        hit = self.row_at(event)
        user = self._user_at.get(hit[0]) if hit is not None else None
        if user is not None and self._frame is not None:
            self.post_message(UserClicked(self, self._frame.table.users[user]))

    def set_chart(self, users: list[int], edges: list[float], series: dict[int, list[float]],
                  engine: FairnessReport | None = None) -> None:
        """The whole run binned once (see shares_chart); the chart then fills in with the cursor."""
        self._charted, self._edges, self._series, self._engine = users, edges, series, engine
        self._chart_key = None

    def resized(self) -> None:
        if self._frame is not None:
            self.show(self._frame)

    def show(self, frame: Frame) -> None:
        self._frame = frame
        s, table = frame.state, frame.table
        backlogged_weight = sum(table.weight(u) for u in s.backlogged())
        total, busy = s.charged_total or 1.0, s.busy_total or 1.0
        rows: list[tuple[tuple[str, ...], str]] = []
        listed = []
        self._user_at = {}
        for u in top_users(s.charged, table, ROWS):
            if s.charged[u] == 0 and s.queued[u] == 0:
                continue
            self._user_at[len(rows) + 1] = u  # under the header line
            listed.append(u)
            fair = f"{table.weight(u) / backlogged_weight:.1%}" if s.queued[u] and backlogged_weight else "-"
            name = table.users[u] if len(table.users[u]) <= 14 else table.users[u][:13] + "…"
            rows.append(((name, f"{s.charged[u] / total:.1%}", f"{s.busy(u) / busy:.1%}", fair), "bold" if s.queued[u] else "dim"))
        lines: list[Text | FittedLine] = [*grid(("user", "run", "busy", "fair"), rows, (False, True, True, True))]
        lines += [Text()] * (ROWS + 1 - len(lines))  # the chart stays put
        routed = routed_lines(frame, listed)  # a run of several replicas: where their requests went
        if routed:
            for i, u in enumerate(listed):
                self._user_at[len(lines) + 1 + i] = u  # under its header line
            lines += routed + [Text()] * (ROWS + 1 - len(routed))
        lines += placement_lines(frame)
        lines += engine_lines(self._engine, frame.connection is not None)
        chart = self._chart_lines(frame)
        for i, u in enumerate(self._charted):
            self._user_at[len(lines) + 1 + 2 * i] = self._user_at[len(lines) + 2 + 2 * i] = u
        self.set_text([*lines, *chart])

    def _chart_lines(self, frame: Frame) -> list[Text]:
        """The chart up to the bin of the cursor's last dispatch (nothing before the first):
        it only changes when the cursor enters another bin."""
        if not self._charted:
            return []
        last = frame.table.previous_dispatch(frame.k + 1) if frame.k >= 0 else None
        upto = bisect_right(self._edges, frame.table.t[last]) + 1 if last is not None and self._edges else 0
        width = max(1, self.content_region.width - 1)
        if self._chart_key != (upto, width):
            self._chart_key = (upto, width)
            self._chart = [Text("share of each time bin's cost, up to the cursor", "dim", no_wrap=True, overflow="ellipsis")]
            levels = self._bar_styles()
            bins = len(self._edges)
            for u in self._charted:
                # a cell shows the largest share of its bins; bins after the cursor stay
                # blank, so the chart fills in as the replay plays; heights are 0 to 100 %
                series = self._series.get(u, [])[:upto]
                bars = Text(" ", no_wrap=True, overflow="crop")
                for cell in range(width):
                    first = cell * bins // width
                    if first >= len(series):
                        break
                    share = max(series[first : max(first + 1, (cell + 1) * bins // width)])
                    level = min(len(BARS) - 1, int(share * len(BARS)))
                    bars.append(BARS[level], levels[level])
                self._chart += [Text(frame.table.users[u], "dim", no_wrap=True, overflow="ellipsis"), bars]
        return self._chart

    def _bar_styles(self) -> list[Style]:
        """A colour per bar height, from the theme's faint to its full primary."""
        low = self.get_component_rich_style("shares--min-color").color
        high = self.get_component_rich_style("shares--max-color").color
        if low is None or high is None:
            return [Style(color=high)] * len(BARS)
        return [Style(color=Color.from_triplet(blend_rgb(low.get_truecolor(), high.get_truecolor(), level / (len(BARS) - 1))))
                for level in range(len(BARS))]
