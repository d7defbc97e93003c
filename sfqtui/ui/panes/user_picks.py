"""Which users a step shows, picked over every user at once: the band's rows and a pane's
top senders. A step redraws each pane, so a Python loop over thousands of users per view
was most of its cost; numpy views the state's arrays without copying them.
"""

from __future__ import annotations

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
