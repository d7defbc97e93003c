"""The largest gain of one user's charged cost over another's inside an interval, and the
compact per-user records the audit and the fairness figures keep to compute it."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from heapq import nlargest
from itertools import islice

# Per user: the positions in the log of its dispatches and its cumulative charge after each.
History = Mapping[str, tuple[Sequence[int], Sequence[float]]]


def max_gain(i: str, j: str, start: int, end: int, history: History) -> tuple[float, int, int] | None:
    """max over start <= k1 < k2 <= end of (C_i - C_j)(k2) - (C_i - C_j)(k1), with k1 and k2.

    C_i - C_j only moves when i or j is charged, so merging their dispatches is exact.
    Returns None when i is not charged inside the interval.
    """
    i_at, i_total = history.get(i, ((), ()))
    j_at, j_total = history.get(j, ((), ()))
    a = bisect_right(i_at, start)
    b = bisect_right(j_at, start)
    c_i = i_total[a - 1] if a else 0.0
    c_j = j_total[b - 1] if b else 0.0
    lowest, lowest_at = c_i - c_j, start
    best: tuple[float, int, int] | None = None
    while True:
        next_i = i_at[a] if a < len(i_at) and i_at[a] <= end else None
        next_j = j_at[b] if b < len(j_at) and j_at[b] <= end else None
        if next_i is None and next_j is None:
            return best
        if next_i is not None and (next_j is None or next_i < next_j):
            c_i = i_total[a]
            a += 1
            gain = c_i - c_j - lowest
            if best is None or gain > best[0]:
                best = (gain, lowest_at, next_i)
        else:
            assert next_j is not None
            c_j = j_total[b]
            b += 1
            if c_i - c_j < lowest:
                lowest, lowest_at = c_i - c_j, next_j


@dataclass(frozen=True)
class Gain:
    """``gain`` of charged cost between two events, named by their labels (seq or time)."""

    gain: float
    start: float
    end: float


class DispatchHistory:
    """Every user's dispatches in typed arrays: position in the log, cumulative charge after
    it, and a label to report it by (``label_type`` "q" for a seq, "d" for a time)."""

    def __init__(self, label_type: str) -> None:
        self._label_type = label_type
        self.charges: dict[str, tuple[array, array]] = {}
        self._labels: dict[str, array] = {}

    def add(self, user: str, position: int, total: float, label: float) -> None:
        at_total = self.charges.get(user)
        if at_total is None:
            at_total = self.charges[user] = (array("q"), array("d"))
            self._labels[user] = array(self._label_type)
        at_total[0].append(position)
        at_total[1].append(total)
        self._labels[user].append(label)

    def gain(self, i: str, j: str, start: int, end: int, start_label: float) -> Gain | None:
        """max_gain of i over j from position ``start`` (labelled ``start_label``) to ``end``."""
        found = max_gain(i, j, start, end, self.charges)
        if found is None:
            return None
        gain, low_at, high_at = found
        low_label = start_label if low_at == start else self._label(j, low_at)
        return Gain(gain, low_label, self._label(i, high_at))

    def _label(self, user: str, position: int) -> float:
        return self._labels[user][bisect_left(self.charges[user][0], position)]


class Episodes:
    """Backlog episodes as compact records, one typed array per field: whose (a code into
    ``names``), where it started and ended (positions in the log), the label of its start
    (seq or time), the largest drop of its user's y = C - reference inside it, and, when
    ``with_rise``, the largest rise."""

    def __init__(self, label_type: str, with_rise: bool = False) -> None:
        self.user = array("i")
        self.start = array("q")
        self.end = array("q")
        self.start_label: array[float] = array(label_type)  # "d" for times, "q" for positions
        self.drop = array("d")
        self.rise = array("d") if with_rise else None
        self.names: list[str] = []
        self._codes: dict[str, int] = {}

    def add(self, user: str, start: int, end: int, start_label: float, drop: float, rise: float | None = None) -> None:
        code = self._codes.get(user)
        if code is None:
            code = self._codes[user] = len(self.names)
            self.names.append(user)
        self.user.append(code)
        self.start.append(start)
        self.end.append(end)
        self.start_label.append(start_label)
        self.drop.append(drop)
        if self.rise is not None:
            assert rise is not None, "episodes kept with_rise each carry their rise"
            self.rise.append(rise)

    def user_of(self, episode: int) -> str:
        return self.names[self.user[episode]]


class Ranked:
    """Indices into ``values`` from the largest value down (ties: the lower index first, as a
    stable sort gives), sorted only as far as they are read: the searches that walk them
    stop early, and sorting millions of backlog episodes would cost more than they keep."""

    def __init__(self, values: Sequence[float], batch: int = 64) -> None:
        self._values = values
        self._order: list[int] = []
        self._batch = batch

    def __iter__(self) -> Iterator[int]:
        read = 0
        while read < len(self._order) or self._extend():
            sorted_part = self._order[read:]
            read += len(sorted_part)
            yield from sorted_part

    def first(self, count: int) -> list[int]:
        return list(islice(self, count))

    def _extend(self) -> bool:
        """Sort the next batch (each batch four times the last); False when none is left."""
        values, order = self._values, self._order
        if len(order) == len(values):
            return False
        if order:
            last = order[-1]
            bound = values[last]
            rest: Iterator[int] | range = (e for e in range(len(values)) if values[e] < bound or (values[e] == bound and e > last))
        else:
            rest = range(len(values))
        batch = nlargest(self._batch, rest, key=values.__getitem__)
        order += batch
        self._batch *= 4
        return bool(batch)
