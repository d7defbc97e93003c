"""Event kinds and the engine's columnar event buffer (semantics §7)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import cast

# `sync`: a replica raised a user's meter by the charges other replicas made (semantics §11, share sync).
# `merge`: a live group's replica, back after the store was away, raised a meter by its own charges (§12).
KINDS: tuple[str, ...] = ("arrive", "dispatch", "complete", "idle_reset", "cancel", "gap", "sync", "merge")
ARRIVE, DISPATCH, COMPLETE, IDLE_RESET, CANCEL, GAP, SYNC, MERGE = range(len(KINDS))


# One event: (t, kind code, request index or -1, cost or None, v, meter, deficit, credit).
EventRow = tuple[float, int, int, "float | None", "float | None", "float | None", "float | None", "float | None"]
# One event of a replicated replay: the same, then the replica (-1: none) and the user code (-1: none).
ReplicaEventRow = tuple[float, int, int, "float | None", "float | None", "float | None", "float | None", "float | None", int, Hashable]


@dataclass
class EventColumns:
    """Events in seq order as parallel columns, seq = ``start`` + position.

    ``req`` is the trace index of the event's request (-1 for idle_reset); the request id
    and user are looked up from the trace when the rows are written. ``cost`` and
    ``credit`` (the DRR deficit a dispatch was sent against) are ``None`` except on
    dispatches; so are ``ratio`` and ``est_output`` (what the estimator priced a dispatch
    with), which are ``None`` altogether when no estimator priced the replay.
    """

    start: int
    t: Sequence[float]
    kind: Sequence[int]
    req: Sequence[int]
    cost: Sequence[float | None]
    v: Sequence[float | None]
    meter: Sequence[float | None]
    deficit: Sequence[float | None]
    credit: Sequence[float | None]
    ratio: Sequence[float | None] | None = None
    est_output: Sequence[float | None] | None = None
    replica: Sequence[int] | None = None
    user: Sequence[int] | None = None

    def __len__(self) -> int:
        return len(self.kind)


@dataclass
class EventBuffer:
    """The engine appends one tuple per event (cheapest in the hot loop); columns come out on demand.

    ``replicated``: the rows are ReplicaEventRows."""

    start: int = 0
    rows: list[EventRow] = field(default_factory=list)
    replicated: bool = False

    def __len__(self) -> int:
        return len(self.rows)

    def columns(self) -> EventColumns:
        rows = self.rows
        columns = EventColumns(self.start, [row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows],
                               [row[3] for row in rows], [row[4] for row in rows], [row[5] for row in rows], [row[6] for row in rows],
                               [row[7] for row in rows])
        if self.replicated:
            replicated = cast(list[ReplicaEventRow], rows)
            columns.replica = [row[8] for row in replicated]
            columns.user = cast(list[int], [row[9] for row in replicated])  # the engine's users are codes
        return columns

    def drain_columns(self) -> EventColumns:
        """The rows held so far as columns; the buffer starts empty after them."""
        columns = self.columns()
        self.start += len(self.rows)
        self.rows = []
        return columns

    def drain(self) -> tuple[int, list[EventRow]]:
        """Hand over the rows held so far (with the seq of the first) and start an empty buffer after them."""
        start, rows = self.start, self.rows
        self.start += len(rows)
        self.rows = []
        return start, rows
