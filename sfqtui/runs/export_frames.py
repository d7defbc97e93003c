"""What the dashboard's exports write, built without any UI: the event log's rows as listed
(after `d` and `f`) and the shares table at the cursor, as data frames, and their writing
to CSV or Parquet. The dialogs that ask where (sfqtui.ui) only fix what to write on the
main thread and hand it here on a worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from sfqtui.core.events import KINDS
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import State
from sfqtui.errors import InputError
from sfqtui.paths import atomic_output, check_output


def checked_output(text: str, suffix: str) -> Path:
    """The file to write, from what the user typed (``suffix`` added when it has none):
    InputError saying what is wrong with it before anything is done."""
    if not text.strip():
        raise InputError("no file name given")
    path = Path(text.strip()).expanduser()
    if not path.suffix and not path.is_dir():
        path = path.with_suffix(suffix)
    return check_output(path, option="export to").resolve()


@dataclass(frozen=True)
class ListedRows:
    """The rows an event log lists, fixed on the main thread: the table, how many of its
    events are in, and the listed events (None: all) with how many of them."""

    table: EventTable
    events: int
    dispatches: int
    listed: Sequence[int] | None
    count: int

    @classmethod
    def of(cls, table: EventTable, listed: Sequence[int] | None) -> ListedRows:
        """What a log of ``table`` listing ``listed`` (None: every event) shows now."""
        return cls(table, len(table), len(table.dispatches), listed, len(listed) if listed is not None else len(table))


def log_frame(rows: ListedRows) -> pl.DataFrame:
    """The listed rows with the log's columns (§7 names), gathered in bulk: safe on a worker
    while the table grows, since every column is copied up to the fixed length first."""
    table, n = rows.table, rows.events
    events = None if rows.listed is None else np.asarray(rows.listed[: rows.count], np.int64)

    def listed(column: np.ndarray) -> np.ndarray:
        return column if events is None else column[events]

    dispatches = np.frombuffer(table.dispatches[: rows.dispatches], np.int64)
    cost = np.full(n, np.nan)
    cost[dispatches] = np.frombuffer(table.cost[: rows.dispatches], np.float64)
    users = pl.Series([*table.users, None], dtype=pl.String)
    user = listed(np.frombuffer(table.user[:n], np.int32))
    req = listed(np.frombuffer(table.req[:n], np.int32))
    request = table.names.take(req) if table.names is not None else [None] * len(req)
    columns = {
        "seq": table.first_seq + (np.arange(n) if events is None else events),
        "t": listed(np.frombuffer(table.t[:n], np.float64)),
        "kind": pl.Series(KINDS).gather(listed(np.frombuffer(table.kind[:n], np.int8))),
        "user": users.gather(np.where(user < 0, len(table.users), user)),
        "cost": pl.Series(listed(cost), nan_to_null=True),
        "v": pl.Series(listed(np.frombuffer(table.v[:n], np.float64)), nan_to_null=True),
    }
    traits = table.traits
    if traits is not None and traits.reading:
        columns[traits.reading] = pl.Series(listed(np.frombuffer(table.value[:n], np.float64)), nan_to_null=True)
    columns["request_id"] = pl.Series(request, dtype=pl.String)
    return pl.DataFrame(columns)


def shares_frame(table: EventTable, s: State) -> pl.DataFrame:
    """The shares table at state ``s`` of ``table``, for every user charged or waiting (the
    panel shows the top few): cost charged, its share over the run and the busy period, and
    the fair share among the users waiting now."""
    backlogged = sum(table.weight(u) for u in s.backlogged())
    total, busy = s.charged_total or 1.0, s.busy_total or 1.0
    shown = sorted((u for u in range(len(s.charged)) if s.charged[u] or s.queued[u]), key=lambda u: (-s.charged[u], table.users[u]))
    return pl.DataFrame({
        "user": [table.users[u] for u in shown],
        "charged": [s.charged[u] for u in shown],
        "run_share": [s.charged[u] / total for u in shown],
        "busy_share": [s.busy(u) / busy for u in shown],
        "fair_share": [table.weight(u) / backlogged if s.queued[u] and backlogged else None for u in shown],
        "queued": [s.queued[u] for u in shown],
        "dispatched": [s.dispatched[u] for u in shown],
    }, schema_overrides={"fair_share": pl.Float64})


def write(data: pl.DataFrame, path: Path) -> None:
    """Parquet for a .parquet file, else CSV; nothing is left behind on failure."""
    with atomic_output(path) as tmp:
        if path.suffix == ".parquet":
            data.write_parquet(tmp)
        else:
            data.write_csv(tmp)
