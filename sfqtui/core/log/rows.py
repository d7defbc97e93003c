"""An event log held as plain columns, as the audits and the state rebuilder read it."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from itertools import chain
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sfqtui.core.events import EventColumns
    from sfqtui.core.requests.trace import Trace


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
    output_tokens: Sequence[int | None] | None = None  # the actual output, on complete rows
    replica: Sequence[int | None] | None = None  # a replicated replay's log (semantics §11)
    since_seq: Sequence[int | None] | None = None  # on a merge row: the last seq its replica saw before serving on its own

    def __len__(self) -> int:
        return len(self.seq)


def without_kinds(rows: LogRows, kinds: Collection[str]) -> LogRows:
    """The rows but those of ``kinds`` (the same LogRows when it has none; seqs kept)."""
    if not any(kind in rows.kind for kind in kinds):
        return rows
    keep = [k for k, kind in enumerate(rows.kind) if kind not in kinds]
    picked: dict[str, Any] = {}
    for field in fields(rows):
        column = getattr(rows, field.name)
        if field.name != "scheduler" and column is not None:
            picked[field.name] = [column[k] for k in keep]
    return replace(rows, **picked)


def chunks_of(log: LogRows | Iterable[LogRows]) -> tuple[str | None, Iterator[LogRows]]:
    """A log given whole or as consecutive chunks: the first chunk's scheduler (None when
    there is no chunk) and every chunk, in order."""
    if isinstance(log, LogRows):
        return log.scheduler, iter((log,))
    chunks = iter(log)
    first = next(chunks, None)
    if first is None:
        return None, chunks
    return first.scheduler, chain((first,), chunks)


def rows_from_replay(columns: EventColumns, trace: Trace, scheduler: str) -> LogRows:
    """LogRows for events handed over by the engine: users looked up from the trace, and
    requests named by their trace index (the audits only need them to tell requests apart)."""
    from sfqtui.core.events import COMPLETE, KINDS

    names, codes = trace.users, trace.user
    if columns.user is not None:  # a replicated replay names users by code (a sync row has no request)
        users = [names[u] if u >= 0 else None for u in columns.user]
    else:
        users = [names[codes[r]] if r >= 0 else None for r in columns.req]
    weight = [trace.weights.get(u, 1.0) if u is not None else None for u in users] if trace.weights else None
    outputs = trace.output_tokens
    output_tokens = None if outputs is None else [
        outputs[r] if kind == COMPLETE and outputs[r] >= 0 else None for kind, r in zip(columns.kind, columns.req)
    ]
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
        output_tokens=output_tokens,
        replica=None if columns.replica is None else [None if k < 0 else k for k in columns.replica],
    )
