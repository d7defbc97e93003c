"""Cost shares: over the run and the current busy period, against the fair share now."""

from __future__ import annotations

from bisect import bisect_right

from rich.text import Text
from textual.renderables.sparkline import Sparkline

from sfqtui.core.analysis.shares import share_series, top_users
from sfqtui.core.log.table import EventTable
from sfqtui.ui.columns import grid
from sfqtui.ui.frame import Frame
from sfqtui.ui.text_view import TextView

ROWS = 6
CHARTED = 3


def shares_chart(table: EventTable, events: int) -> tuple[list[int], list[float], dict[int, list[float]]]:
    """The charted users (the top spenders), bin edges and each one's share per bin, over the
    log's first ``events`` events (on a worker: the table may grow meanwhile)."""
    users = top_users(None, table, CHARTED, events)
    edges, series = share_series(table, users, events)
    return users, edges, series


class SharesPanel(TextView):
    """The shares table over a chart of the top spenders' shares per time bin, as one view
    (a widget per chart line would cost a frame more to composite)."""

    COMPONENT_CLASSES = {"shares--max-color", "shares--min-color"}
    DEFAULT_CSS = """
    SharesPanel { height: 1fr; }
    SharesPanel > .shares--max-color { color: $primary; }
    SharesPanel > .shares--min-color { color: $primary 30%; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._edges: list[float] = []
        self._series: dict[int, list[float]] = {}
        self._charted: list[int] = []
        self._chart: list[Text] = []
        self._chart_key: tuple[int, int] | None = None
        self._frame: Frame | None = None

    def set_chart(self, users: list[int], edges: list[float], series: dict[int, list[float]]) -> None:
        """The whole run binned once (see shares_chart); the chart then fills in with the cursor."""
        self._charted, self._edges, self._series = users, edges, series
        self._chart_key = None

    def resized(self) -> None:
        if self._frame is not None:
            self.show(self._frame)

    def show(self, frame: Frame) -> None:
        self._frame = frame
        s, table = frame.state, frame.table
        backlogged_weight = sum(table.weight(u) for u in s.backlogged())
        total, busy = s.charged_total or 1.0, s.busy_total or 1.0
        rows = []
        for u in top_users(s.charged, table, ROWS):
            if s.charged[u] == 0 and s.queued[u] == 0:
                continue
            fair = f"{table.weight(u) / backlogged_weight:.1%}" if s.queued[u] and backlogged_weight else "-"
            name = table.users[u] if len(table.users[u]) <= 14 else table.users[u][:13] + "…"
            rows.append(((name, f"{s.charged[u] / total:.1%}", f"{s.busy(u) / busy:.1%}", fair), "bold" if s.queued[u] else "dim"))
        lines = grid(("user", "run", "busy", "fair"), rows, (False, True, True, True))
        lines += [Text()] * (ROWS + 1 - len(lines))  # the chart stays put
        self.set_text(lines + self._chart_lines(frame))

    def _chart_lines(self, frame: Frame) -> list[Text]:
        """The chart up to the cursor's time bin: it only changes when the cursor enters another."""
        if not self._charted:
            return []
        upto = bisect_right(self._edges, frame.state.t) + 1 if self._edges else 0
        width = max(1, self.content_region.width - 1)
        if self._chart_key != (upto, width):
            self._chart_key = (upto, width)
            low = self.get_component_rich_style("shares--min-color").color
            high = self.get_component_rich_style("shares--max-color").color
            assert low is not None and high is not None  # DEFAULT_CSS colours both
            console = self.app.console
            self._chart = [Text("share of each time bin's cost, up to the cursor", "dim", no_wrap=True, overflow="ellipsis")]
            for u in self._charted:
                # bins after the cursor stay empty, so the chart fills in as the replay plays
                shares = [x if b < upto else 0.0 for b, x in enumerate(self._series.get(u, []))] or [0.0]
                bars = console.render_lines(Sparkline(shares, width=width, min_color=low, max_color=high), console.options.update_width(width))[0]
                self._chart += [Text(frame.table.users[u], "dim", no_wrap=True, overflow="ellipsis"),
                                Text.assemble(" ", *((seg.text, seg.style or "") for seg in bars), no_wrap=True, overflow="crop")]
        return self._chart
