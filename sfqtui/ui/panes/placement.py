"""Where requests were placed, per upstream (an engine of a replay, a live proxy's upstream),
up to the cursor: for the cost shares pane, from the log's table (``sfqtui.core.log.placements``).

Shown when the log names where its requests went (a replay with the engine model, or a lone
proxy's stream, whose dispatches name their upstream), to more than one upstream or with
what their caches held. Each upstream's requests placed and still
in flight; with ``--placement prefix`` the prompt tokens the proxy's index predicted it held,
summed over those placed; and where the log says them, the tokens its engine found cached
(a replay's requests that started, a proxy's that completed with usage that says so)."""

from __future__ import annotations

from rich.text import Text

from sfqtui.core.log.placements import upstream_title
from sfqtui.core.numbers import count
from sfqtui.ui.frame import Frame
from sfqtui.ui.widgets.columns import fitted_grid
from sfqtui.ui.widgets.fitted_line import FittedLine

ROWS = 6
NAME_WIDTH = 22


def _name(name: str) -> str:
    title = upstream_title(name)
    return title if len(title) <= NAME_WIDTH else title[: NAME_WIDTH - 1] + "…"


def placement_lines(frame: Frame) -> list[Text | FittedLine]:
    """The placement table at the frame's cursor (nothing when the log names no upstream)."""
    placements = frame.table.placements
    if len(placements.names) < 2 and not (placements.predicts or placements.reports):
        return []  # one upstream, and nothing said of its cache: the status line says as much
    figures = placements.at(frame.k) if frame.k >= 0 else []
    if not figures:
        return []
    header = ("placed on", "requests", "in flight", *(("predicted",) if placements.predicts else ()),
              *(("cached",) if placements.reports else ()))
    rows = []
    for f in figures[:ROWS]:
        tokens = [count(x) for x in (f.predicted, f.cached) if x is not None]
        rows.append(((_name(f.name), count(f.placed), count(f.inflight), *tokens), ""))
    if len(figures) > ROWS:
        rows.append(((f"… {count(len(figures) - ROWS)} more", *[""] * (len(header) - 1)), "dim"))
    # A narrow pane leaves out in flight first, then the prediction, then what was found.
    ranks = (None, None, 1, *((2,) if placements.predicts else ()), *((3,) if placements.reports else ()))
    return [*fitted_grid(header, rows, (False, *[True] * (len(header) - 1)), ranks), Text()]
