"""An event log held as plain columns, as the audits and the state rebuilder read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from sfqtui.core.engine.events import EventColumns
    from sfqtui.core.engine.trace import Trace


@dataclass(frozen=True)
class LogRows:
    """The §7 columns of a log (one scheduler), plus the extras when present."""

    scheduler: str
    seq: Sequence[int]
    t: Sequence[float]
    kind: Sequence[str]
    user: Sequence[str | None]
    request_id: Sequence[str | None]
    cost: Sequence[float | None]
    v: Sequence[float | None]
    meter: Sequence[float | None]
    deficit: Sequence[float | None]
    weight: Sequence[float | None] | None = None
    credit: Sequence[float | None] | None = None

    def __len__(self) -> int:
        return len(self.seq)


def rows_from_replay(columns: EventColumns, trace: Trace, scheduler: str) -> LogRows:
    """LogRows for events still held by the engine (ids and users looked up from the trace)."""
    from sfqtui.core.engine.events import KINDS

    request_ids = [trace.request_id[r] if r >= 0 else None for r in columns.req]
    users = [trace.user[r] if r >= 0 else None for r in columns.req]
    weight = [trace.weights.get(u, 1.0) if u is not None else None for u in users] if trace.weights else None
    return LogRows(
        scheduler=scheduler,
        seq=range(columns.start, columns.start + len(columns)),
        t=columns.t,
        kind=[KINDS[k] for k in columns.kind],
        user=users,
        request_id=request_ids,
        cost=columns.cost,
        v=columns.v,
        meter=columns.meter,
        deficit=columns.deficit,
        weight=weight,
    )
