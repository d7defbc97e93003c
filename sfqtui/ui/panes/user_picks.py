"""Which users a step shows, picked over every user at once: the band's rows and a pane's
top senders. A step redraws each pane, so a Python loop over thousands of users per view
was most of its cost; numpy views the state's arrays without copying them.
"""

from __future__ import annotations

from array import array

import numpy as np

from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import State

_NAME_ORDERS = 8  # name orders kept as arrays: one per pane's table, and a few more


_name_orders: dict[int, tuple[list[int], np.ndarray]] = {}  # by the id of the table's list, which each entry keeps alive


def _by_name(table: EventTable, known: int) -> np.ndarray:
    """User codes in name order, those the state knows of."""
    order = table.users_by_name()  # the same list until new users arrive
    kept = _name_orders.get(id(order))
    if kept is None:
        if len(_name_orders) >= _NAME_ORDERS:
            _name_orders.clear()
        kept = _name_orders[id(order)] = (order, np.asarray(order, dtype=np.int64))
    codes = kept[1]
    return codes[codes < known]


def meters_or_inf(s: State) -> list[float]:
    """Each user's meter (counter, deficit), inf for none yet (NaN in the state)."""
    values = np.frombuffer(s.value, dtype=np.float64)
    return np.where(values == values, values, np.inf).tolist()


def band_users(table: EventTable, s: State, show_folded: bool, fold_after_s: float) -> tuple[list[int], int]:
    """The users the band lists, in name order, and how many it folds away: a user with an
    event, unless idle (nothing queued or running) for over ``fold_after_s`` and folding is
    on; and one waiting since before a live stream's window (no event seen yet)."""
    codes = _by_name(table, min(len(s.last_event), len(s.queued)))
    last = np.frombuffer(s.last_event, dtype=np.int64)[codes]
    waiting = (np.frombuffer(s.queued, dtype=np.int32)[codes] != 0) | (np.frombuffer(s.inflight_of, dtype=np.int32)[codes] != 0)
    seen = last >= 0
    if show_folded:
        return codes[seen | waiting].tolist(), 0
    times = np.frombuffer(table.t, dtype=np.float64)[np.where(seen, last, 0)] if len(table.t) else np.zeros(len(codes))
    folded = seen & ~waiting & (s.t - times > fold_after_s)
    return codes[waiting | (seen & ~folded)].tolist(), int(np.count_nonzero(folded))


def top_senders(table: EventTable, s: State, rows: int) -> tuple[list[int], int]:
    """The ``rows`` users charged most (ties in name order) among those with a dispatch, and
    how many have one."""
    codes = _by_name(table, min(len(s.charged), len(s.dispatched)))
    sent = codes[np.frombuffer(s.dispatched, dtype=np.int32)[codes] != 0]
    order = np.argsort(-np.frombuffer(s.charged, dtype=np.float64)[sent], kind="stable")  # stable: ties keep name order
    return sent[order[:rows]].tolist(), len(sent)


def deciding(values: np.ndarray) -> list[float]:
    """The few of a column's values that decide its format (``Fixed.of``: the largest
    magnitude, whether all are whole) and its width (``Fixed.width``: the least and the
    greatest), so that a step formats a column of thousands of users from three numbers.
    Non-finite values are left out (the band's columns hold none)."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return []
    fractional = finite[finite != np.trunc(finite)]
    return [float(finite.min()), float(finite.max()), *fractional[:1].tolist()]


def band_columns(sections: list[tuple[State, list[int]]], values: list[list[float]], bases: tuple[float, ...],
                 weights: array) -> tuple[list[float], list[float], int]:
    """Over the band's rows of every section: the deciding values (``deciding``) of the
    numbers shown (each user's value from its section's base; a user with none yet left
    out), of the weights, and the most queued."""
    shown, weighed, most_queued = [], [], 0
    for (state, rows), vals, base in zip(sections, values, bases):
        picked = np.asarray(vals, dtype=np.float64)[rows]
        shown.append(picked[picked != np.inf] - base)
        weighed.append(np.frombuffer(weights, dtype=np.float64)[rows])
        if rows:
            most_queued = max(most_queued, int(np.frombuffer(state.queued, dtype=np.int32)[rows].max()))
    return deciding(np.concatenate(shown or [np.zeros(0)])), deciding(np.concatenate(weighed or [np.zeros(0)])), most_queued


def sorted_by_share(users: list[int], s: State) -> list[int]:
    """``users`` by charge, largest first; ties keep their order (a stable sort)."""
    codes = np.asarray(users, dtype=np.int64)
    return codes[np.argsort(-np.frombuffer(s.charged, dtype=np.float64)[codes], kind="stable")].tolist()


def sorted_by_meter(users: list[int], s: State, values: list[float]) -> list[int]:
    """``users`` with those queued first, each group by its value; ties keep their order."""
    codes = np.asarray(users, dtype=np.int64)
    idle = np.frombuffer(s.queued, dtype=np.int32)[codes] == 0
    return codes[np.lexsort((np.asarray(values, dtype=np.float64)[codes], idle))].tolist()
