"""Cost shares: over the run and the current busy period, against the fair share now."""

from __future__ import annotations

from bisect import bisect_right

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Sparkline, Static

from sfqtui.core.shares import share_series, top_users
from sfqtui.ui.frame import Frame

ROWS = 6
CHARTED = 3


class SharesPanel(Vertical):
    DEFAULT_CSS = """
    SharesPanel { height: 1fr; }
    SharesPanel > #shares-table { height: auto; }
    SharesPanel Sparkline { height: 1; margin: 0 0 0 1; }
    SharesPanel Label { color: $text-muted; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._edges: list[float] = []
        self._series: dict[int, list[float]] = {}
        self._charted: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static(id="shares-table")
        yield Label("share of each time bin's cost", id="chart-title")
        for i in range(CHARTED):
            yield Label("", id=f"chart-label-{i}")
            yield Sparkline([], id=f"chart-{i}")

    def prepare_chart(self, frame: Frame) -> None:
        """Bin the whole (loaded) run once; the chart then grows with the cursor."""
        self._charted = top_users(None, frame.table, CHARTED)
        self._edges, self._series = share_series(frame.table, self._charted)

    def show(self, frame: Frame) -> None:
        s, table = frame.state, frame.table
        backlogged_weight = sum(table.weight(u) for u in s.backlogged())
        grid = Table(box=None, pad_edge=False, expand=True, header_style="bold")
        for name, justify in (("user", "left"), ("run", "right"), ("busy", "right"), ("fair now", "right")):
            grid.add_column(name, justify=justify)
        total, busy = s.charged_total or 1.0, s.busy_total or 1.0
        for u in top_users(list(s.charged), table, ROWS):
            if s.charged[u] == 0 and s.queued[u] == 0:
                continue
            fair = f"{table.weight(u) / backlogged_weight:.1%}" if s.queued[u] and backlogged_weight else "-"
            style = "bold" if s.queued[u] else "dim"
            grid.add_row(table.users[u], f"{s.charged[u] / total:.1%}", f"{s.busy(u) / busy:.1%}", fair, style=style)
        self.query_one("#shares-table", Static).update(grid)
        upto = bisect_right(self._edges, s.t) + 1 if self._edges else 0
        self.query_one("#chart-title", Label).display = bool(self._charted)
        for i in range(CHARTED):
            label = self.query_one(f"#chart-label-{i}", Label)
            chart = self.query_one(f"#chart-{i}", Sparkline)
            shown = i < len(self._charted)
            label.display = chart.display = shown
            if shown:
                u = self._charted[i]
                series = self._series.get(u, [])
                label.update(f"{table.users[u]}: bins up to t={s.t:g}")
                # bins after the cursor stay empty, so the chart fills in as the replay plays
                chart.data = [x if b < upto else 0.0 for b, x in enumerate(series)] or [0.0]
