"""The backlogged user with the smallest value (a meter, a counter), from a heap whose stale entries are skipped;
what a pick of another user broke."""

from __future__ import annotations

import heapq

from sfqtui.core.numbers import amount, distinct


def smallest_backlogged(heap: list[tuple[float, str]], queued: dict[str, int], value: dict[str, float]) -> tuple[float, str] | None:
    """The heap's smallest (value, user) that is current: the user still has requests queued
    and its value is still the one pushed. Stale entries on top are dropped on the way."""
    while heap:
        v, user = heap[0]
        if queued.get(user, 0) and value.get(user) == v:
            return heap[0]
        heapq.heappop(heap)
    return None


def wrong_pick(user: str, value: float, top: tuple[float, str], name: str, key: str) -> str:
    """Why picking ``user`` (its ``name``, e.g. meter, at ``value``) broke "pick the smallest
    (``key``, id)" when ``top`` was the smallest: a smaller value, or the same and a smaller id."""
    smallest, other = top
    if smallest == value:
        return (f"picked {user} at {name} {amount(value)}; backlogged {other} had the same {name} and the smaller id "
                f"({other} < {user}), and the pick takes the smallest ({key}, id)")
    picked, lower = distinct(value, smallest)
    return f"picked {user} at {name} {picked}; backlogged {other} had the smaller {name} {lower}, and the pick takes the smallest ({key}, id)"
