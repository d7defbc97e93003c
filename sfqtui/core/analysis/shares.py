"""Each user's share of charged cost over time, in equal time bins (for the shares chart)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from sfqtui.core.log.table import EventTable


def top_users(charged: Sequence[float] | None, table: EventTable, count: int) -> list[int]:
    """The ``count`` users charged most (ties by name), from ``charged`` or the whole log."""
    totals = charged if charged is not None else _totals(table)
    return heapq.nlargest(count, (u for u in table.users_by_name() if u < len(totals)), key=totals.__getitem__)


def _totals(table: EventTable) -> list[float]:
    totals = [0.0] * len(table.users)
    for k, cost in zip(table.dispatches, table.cost):
        totals[table.user[k]] += cost
    return totals


def share_series(table: EventTable, users: list[int], bins: int = 48) -> tuple[list[float], dict[int, list[float]]]:
    """Bin edges (end time of each bin) and, per user, its share of the cost charged in each bin."""
    if not len(table.dispatches):
        return [], {u: [] for u in users}
    start, end = table.t[0], table.t[len(table) - 1]  # the log so far: it may still be growing
    width = (end - start) / bins or 1.0
    totals = [0.0] * bins
    mine = {u: [0.0] * bins for u in users}
    for k, cost in zip(table.dispatches, table.cost):
        b = min(bins - 1, int((table.t[k] - start) / width))
        totals[b] += cost
        series = mine.get(table.user[k])
        if series is not None:
            series[b] += cost
    edges = [start + width * (b + 1) for b in range(bins)]
    return edges, {u: [x / t if t else 0.0 for x, t in zip(series, totals)] for u, series in mine.items()}
