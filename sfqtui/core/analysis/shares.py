"""Each user's share of charged cost over time, in equal time bins (for the shares chart), and
the fairness figures at engine start of a log whose engine reported starts (the line under it).

These read the log on a worker thread while the app may append to it, so they read only
its first ``events`` events, a bound the caller took before: everything of those events
(their users, their dispatches' costs) is in the table by then.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import islice

from sfqtui.core.analysis.fairness import FairnessReport, FairnessTally
from sfqtui.core.events import KINDS, START
from sfqtui.core.log.rows import LogRows
from sfqtui.core.log.table import EventTable


def top_users(charged: Sequence[float] | None, table: EventTable, count: int, events: int | None = None) -> list[int]:
    """The ``count`` users charged most (ties by name), from ``charged`` or the log's first
    ``events`` events (all of them: on the thread that appends)."""
    totals = charged if charged is not None else _totals(table, len(table) if events is None else events)
    return heapq.nlargest(count, (u for u in table.users_by_name() if u < len(totals)), key=totals.__getitem__)


def _dispatches(table: EventTable, events: int) -> zip[tuple[int, float]]:
    """(event index, cost) of each dispatch among the first ``events`` events."""
    n = table.dispatch_number(events)
    return zip(islice(table.dispatches, n), islice(table.cost, n))


def _totals(table: EventTable, events: int) -> list[float]:
    totals = [0.0] * len(table.users)  # read after the bound: every user of those events is in
    for k, cost in _dispatches(table, events):
        totals[table.user[k]] += cost
    return totals


def share_series(table: EventTable, users: list[int], events: int, bins: int = 48) -> tuple[list[float], dict[int, list[float]]]:
    """Bin edges (end time of each bin) and, per user, its share of the cost charged in each
    bin, over the log's first ``events`` events."""
    if not table.dispatch_number(events):
        return [], {u: [] for u in users}
    start, end = table.t[0], table.t[events - 1]
    width = (end - start) / bins or 1.0
    totals = [0.0] * bins
    mine = {u: [0.0] * bins for u in users}
    for k, cost in _dispatches(table, events):
        b = min(bins - 1, int((table.t[k] - start) / width))
        totals[b] += cost
        series = mine.get(table.user[k])
        if series is not None:
            series[b] += cost
    edges = [start + width * (b + 1) for b in range(bins)]
    return edges, {u: [x / t if t else 0.0 for x, t in zip(series, totals)] for u, series in mine.items()}


def engine_start_figures(table: EventTable, events: int) -> FairnessReport | None:
    """The fairness figures at dispatch and at engine start over the log's first ``events``
    events (fairness.py), or None when they hold no start row."""
    kinds = table.kind[:events]
    if START not in kinds:
        return None
    names = table.users
    cost: list[float | None] = [None] * events
    for n, k in enumerate(islice(table.dispatches, table.dispatch_number(events))):
        cost[k] = table.cost[n]
    nothing: list[float | None] = [None] * events
    rows = LogRows(table.scheduler, range(events), table.t[:events], [KINDS[k] for k in kinds],
                   [names[u] if u >= 0 else None for u in table.user[:events]],
                   [r if r >= 0 else None for r in table.req[:events]], cost, nothing, nothing, nothing)
    tally = FairnessTally({u: table.weight(code) for code, u in enumerate(names[: len(table.weights)])}, at_engine_start=True)
    tally.feed(rows)
    return tally.report(table.scheduler)
