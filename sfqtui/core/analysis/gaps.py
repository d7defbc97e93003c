"""The largest gain of one user's charged cost over another's inside an interval."""

from __future__ import annotations

from bisect import bisect_right

# Per user: the event indices of its dispatches and its cumulative charge after each.
History = dict[str, tuple[list[int], list[float]]]


def max_gain(i: str, j: str, start: int, end: int, history: History) -> tuple[float, int, int] | None:
    """max over start <= k1 < k2 <= end of (C_i - C_j)(k2) - (C_i - C_j)(k1), with k1 and k2.

    C_i - C_j only moves when i or j is charged, so merging their dispatches is exact.
    Returns None when i is not charged inside the interval.
    """
    i_at, i_total = history.get(i, ([], []))
    j_at, j_total = history.get(j, ([], []))
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
