"""Finding things in the event log: `/` searches request ids and user names, `N` and `P`
step between the matches; and the users closest to a name that is not in the log.

A search matches every event whose request id or user name contains the text, ignoring
case (as less and toolong do by default), among the rows the log lists (after `d` and
`f`). The matches are found once per text and log length, in bulk (Arrow for the request
ids, numpy for the events), so a million-event log answers at once and `N` is a bisect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import get_close_matches

import numpy as np

from sfqtui.core.log.table import EventTable

CLOSEST = 3


@dataclass(frozen=True)
class Found:
    """Where a search step landed: the event, which match it is of how many, and
    whether it went round the end of the log to get there."""

    k: int
    position: int
    count: int
    wrapped: bool


class LogSearch:
    def __init__(self) -> None:
        self.text = ""
        self._key: tuple[object, ...] | None = None
        self._matches: np.ndarray = np.empty(0, np.int64)

    def matches(self, table: EventTable, rows: Sequence[int] | None) -> np.ndarray:
        """The event indices that match, ascending, among ``rows`` (None: every event)."""
        n = len(table)
        key = (self.text, id(table), n, id(rows), None if rows is None else len(rows))
        if key != self._key:
            self._key, self._matches = key, _matching(table, n, self.text.strip(), rows)
        return self._matches

    def step(self, table: EventTable, rows: Sequence[int] | None, k: int, direction: int) -> Found | None:
        """The next match after event k (direction 1) or the previous one before it (-1),
        going round the end of the log; None when nothing matches."""
        matches = self.matches(table, rows)
        count = len(matches)
        if not count:
            return None
        if direction > 0:
            i = int(np.searchsorted(matches, k, side="right"))
            wrapped = i == count
            i = 0 if wrapped else i
        else:
            i = int(np.searchsorted(matches, k, side="left")) - 1
            wrapped = i < 0
            i = count - 1 if wrapped else i
        return Found(int(matches[i]), i + 1, count, wrapped)


def _matching(table: EventTable, n: int, text: str, rows: Sequence[int] | None) -> np.ndarray:
    if not text or not n:
        return np.empty(0, np.int64)
    wanted = text.casefold()
    users = [code for code, name in enumerate(table.users) if wanted in name.casefold()]
    requests = table.names.containing(text) if table.names is not None else ()
    # array slices are copies: the table's own buffers stay free to grow
    hit = np.isin(np.frombuffer(table.user[:n], np.int32), users)
    if len(requests):
        hit |= np.isin(np.frombuffer(table.req[:n], np.int32), np.asarray(requests))
    if rows is not None:
        listed = np.asarray(rows[: len(rows)], np.int64)
        listed = listed[listed < n]
        return listed[hit[listed]]
    return np.flatnonzero(hit)


def closest_users(table: EventTable, name: str) -> list[str]:
    """Users whose name starts with or contains ``name`` (ignoring case), else the most
    similar names: what to offer for a user who is not in the log."""
    wanted = name.casefold()
    starting = sorted(u for u in table.users if u.casefold().startswith(wanted))
    containing = sorted(u for u in table.users if wanted in u.casefold() and u not in starting)
    found = (starting + containing)[:CLOSEST]
    return found or get_close_matches(name, table.users, n=CLOSEST, cutoff=0.5)
