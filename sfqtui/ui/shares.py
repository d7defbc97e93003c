"""Cost shares: over the run and the current busy period, against the fair share now."""

from __future__ import annotations

from bisect import bisect_right

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Sparkline, Static

from sfqtui.core.shares import share_series, top_users
from sfqtui.core.table import EventTable
from sfqtui.ui.columns import grid
from sfqtui.ui.frame import Frame

ROWS = 6
CHARTED = 3


def shares_chart(table: EventTable) -> tuple[list[int], list[float], dict[int, list[float]]]:
    """The charted users (the top spenders), bin edges and each one's share per bin."""
    users = top_users(None, table, CHARTED)
    edges, series = share_series(table, users)
    return users, edges, series


class SharesPanel(Vertical):
    DEFAULT_CSS = """
    SharesPanel { height: 1fr; }
    SharesPanel > #shares-table { height: 7; }
    SharesPanel Sparkline { height: 1; margin: 0 0 0 1; }
    SharesPanel Label { color: $text-muted; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._edges: list[float] = []
        self._series: dict[int, list[float]] = {}
        self._charted: list[int] = []
        self._drawn_upto: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="shares-table")
        yield Label("share of each time bin's cost, up to the cursor", id="chart-title")
        for i in range(CHARTED):
            yield Label("", id=f"chart-label-{i}")
            yield Sparkline([], id=f"chart-{i}")

    def set_chart(self, users: list[int], edges: list[float], series: dict[int, list[float]]) -> None:
        """The whole run binned once (see shares_chart); the chart then fills in with the cursor."""
        self._charted, self._edges, self._series = users, edges, series
        self._drawn_upto = None

    def show(self, frame: Frame) -> None:
        s, table = frame.state, frame.table
        backlogged_weight = sum(table.weight(u) for u in s.backlogged())
        total, busy = s.charged_total or 1.0, s.busy_total or 1.0
        rows = []
        for u in top_users(list(s.charged), table, ROWS):
            if s.charged[u] == 0 and s.queued[u] == 0:
                continue
            fair = f"{table.weight(u) / backlogged_weight:.1%}" if s.queued[u] and backlogged_weight else "-"
            name = table.users[u] if len(table.users[u]) <= 14 else table.users[u][:13] + "…"
            rows.append(((name, f"{s.charged[u] / total:.1%}", f"{s.busy(u) / busy:.1%}", fair), "bold" if s.queued[u] else "dim"))
        text = grid(("user", "run", "busy", "fair now"), rows, (False, True, True, True))
        text.append("\n" * (ROWS - len(rows)))
        self.query_one("#shares-table", Static).update(text, layout=False)
        upto = bisect_right(self._edges, s.t) + 1 if self._edges else 0
        if upto == self._drawn_upto:
            return  # the chart only changes when the cursor enters another time bin
        self._drawn_upto = upto
        self.query_one("#chart-title", Label).display = bool(self._charted)
        for i in range(CHARTED):
            label = self.query_one(f"#chart-label-{i}", Label)
            chart = self.query_one(f"#chart-{i}", Sparkline)
            shown = i < len(self._charted)
            label.display = chart.display = shown
            if shown:
                u = self._charted[i]
                label.update(table.users[u])
                # bins after the cursor stay empty, so the chart fills in as the replay plays
                chart.data = [x if b < upto else 0.0 for b, x in enumerate(self._series.get(u, []))] or [0.0]
