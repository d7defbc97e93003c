"""An event log held as plain columns, as the audits and the state rebuilder read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Hashable, Sequence

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
    request_id: Sequence[Hashable | None]
    cost: Sequence[float | None]
    v: Sequence[float | None]
    meter: Sequence[float | None]
    deficit: Sequence[float | None]
    weight: Sequence[float | None] | None = None
    credit: Sequence[float | None] | None = None

    def __len__(self) -> int:
        return len(self.seq)


def rows_from_replay(columns: EventColumns, trace: Trace, scheduler: str) -> LogRows:
    """LogRows for events handed over by the engine: users looked up from the trace, and
    requests named by their trace index (the audits only need them to tell requests apart)."""
    from sfqtui.core.engine.events import KINDS

    names, codes = trace.users, trace.user
    users = [names[codes[r]] if r >= 0 else None for r in columns.req]
    weight = [trace.weights.get(u, 1.0) if u is not None else None for u in users] if trace.weights else None
    return LogRows(
        scheduler=scheduler,
        seq=range(columns.start, columns.start + len(columns)),
        t=columns.t,
        kind=[KINDS[k] for k in columns.kind],
        user=users,
        request_id=[r if r >= 0 else None for r in columns.req],
        cost=columns.cost,
        v=columns.v,
        meter=columns.meter,
        deficit=columns.deficit,
        weight=weight,
        credit=columns.credit,
    )
