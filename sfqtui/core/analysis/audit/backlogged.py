"""The backlogged user with the smallest value (a meter, a counter), from a heap whose stale entries are skipped."""

from __future__ import annotations

import heapq


def smallest_backlogged(heap: list[tuple[float, str]], queued: dict[str, int], value: dict[str, float]) -> tuple[float, str] | None:
    """The heap's smallest (value, user) that is current: the user still has requests queued
    and its value is still the one pushed. Stale entries on top are dropped on the way."""
    while heap:
        v, user = heap[0]
        if queued.get(user, 0) and value.get(user) == v:
            return heap[0]
        heapq.heappop(heap)
    return None
