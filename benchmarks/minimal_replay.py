"""The yardstick of replay_bench.py: a minimal heap-based SFQ replay in plain Python.

Run as a script it is the yardstick end to end (read Parquet, replay, write the dispatch
rows), a process of its own that imports only polars, so that it is measured as
`sfqtui simulate` is, start-up and imports included.

Usage: python benchmarks/minimal_replay.py TRACE OUT SLOTS
"""

from __future__ import annotations

import heapq
import sys
from collections import deque
from pathlib import Path

import polars as pl


def minimal_loop(users: list[str], arrivals: list[float], costs: list[float], services: list[float], slots: int) -> list[tuple]:
    """The yardstick: heap-based SFQ over the same trace, keeping dispatch rows only."""
    queues: dict[str, deque[int]] = {}
    meters: dict[str, float] = {}
    heap: list[tuple[float, str]] = []
    running: list[tuple[float, int]] = []
    v, free, i, n, top = 0.0, slots, 0, len(users), 0.0
    rows: list[tuple[float, int, float, float]] = []
    while i < n or running:
        now = running[0][0] if running and (i >= n or running[0][0] <= arrivals[i]) else arrivals[i]
        while running and running[0][0] == now:
            heapq.heappop(running)
            free += 1
        while i < n and arrivals[i] == now:
            q = queues.setdefault(users[i], deque())
            if not q:
                m = max(meters.get(users[i], v), v)
                meters[users[i]] = m
                heapq.heappush(heap, (m, users[i]))
            q.append(i)
            i += 1
        while free and heap:
            m, u = heapq.heappop(heap)
            v = m
            r = queues[u].popleft()
            meters[u] = m + costs[r]
            top = max(top, meters[u])
            if queues[u]:
                heapq.heappush(heap, (meters[u], u))
            elif not heap:
                v = max(v, top)
            rows.append((now, r, v, meters[u]))
            heapq.heappush(running, (now + services[r], r))
            free -= 1
    return rows


def minimal_replay(trace_path: Path, out: Path, slots: int) -> None:
    """The yardstick end to end: read Parquet, minimal loop, write the dispatch rows."""
    df = pl.read_parquet(trace_path).sort("arrival_s", maintain_order=True)
    rows = minimal_loop(df["user"].to_list(), df["arrival_s"].to_list(), df["cost"].to_list(), df["service_s"].to_list(), slots)
    t, r, vs, ms = zip(*rows)
    pl.DataFrame({"t": t, "request": r, "v": vs, "meter": ms}).write_parquet(out)


if __name__ == "__main__":
    minimal_replay(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
