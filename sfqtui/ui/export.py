"""Export what the dashboard shows, from the palette: the event log's rows as listed (after
`d` and `f`), the shares table at the cursor, to CSV or Parquet; and a screenshot (SVG).

The path is asked for and checked before any work starts (sfqtui.paths, as every
command's outputs). What to write is fixed on the main thread, at once (the table's
length and the rows listed, which only ever grow or are replaced); the columns are then
gathered and written on a worker, so a log of millions of rows does not stop the screen,
and a failed write leaves nothing behind (atomic_output).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from sfqtui.core.engine.events import KINDS
from sfqtui.core.log.table import EventTable
from sfqtui.errors import InputError
from sfqtui.paths import atomic_output, check_output
from sfqtui.ui.ask import Ask
from sfqtui.ui.event_log import EventLog
from sfqtui.ui.frame import Frame

if TYPE_CHECKING:
    from sfqtui.ui.app import SfqApp

FORMATS = ("csv", "parquet")


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
class LogRows:
    """The rows an event log lists, fixed on the main thread: the table, how many of its
    events are in, and the listed events (None: all) with how many of them."""

    table: EventTable
    events: int
    dispatches: int
    listed: Sequence[int] | None
    count: int

    @classmethod
    def of(cls, log: EventLog) -> LogRows:
        assert log.table is not None
        listed = log.listed
        return cls(log.table, len(log.table), len(log.table.dispatches), listed, len(listed) if listed is not None else len(log.table))


def log_frame(rows: LogRows) -> pl.DataFrame:
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


def shares_frame(frame: Frame) -> pl.DataFrame:
    """The shares table at the frame's event, for every user charged or waiting (the panel
    shows the top few): cost charged, its share over the run and the busy period, and the
    fair share among the users waiting now."""
    s, table = frame.state, frame.table
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


def _stamp(app: SfqApp) -> str:
    k = app.cursor.k
    return f"sfqtui-{Path(app.current.title).stem or 'run'}-{'start' if k < 0 else f'seq{app.table.first_seq + k}'}-{datetime.now():%H%M%S}"


def _ask_path(app: SfqApp, what: str, suffix: str, then: Callable[[Path], None]) -> None:
    """Ask where to write (a name in the working directory offered), check it, then go on."""
    def go(answer: str | None) -> None:
        if answer is None:
            return
        try:
            path = checked_output(answer, suffix)
        except InputError as exc:
            app.notify(str(exc), title=f"cannot export {what}", severity="error", timeout=8)
            return
        then(path)

    app.push_screen(Ask(f"Export {what} to (a .csv or .parquet file):" if suffix != ".svg" else f"Save {what} to:",
                        f"{_stamp(app)}{suffix}"), go)


def export_log(app: SfqApp, suffix: str) -> None:
    log = app.main.query(EventLog).first()  # the leading run's
    if log.table is None or not len(log.table):
        app.notify("nothing to export yet: the log is empty", timeout=4)
        return
    rows = LogRows.of(log)
    what = f"the event log ({app.options.log_description or 'all events'})"

    def start(path: Path) -> None:
        app.run_worker(lambda: _write_in_background(app, lambda: log_frame(rows), path, f"{rows.count:,} rows of {what}"),
                       thread=True, group="export", exit_on_error=False, description="exporting")

    _ask_path(app, what, suffix, start)


def export_shares(app: SfqApp, suffix: str) -> None:
    frame = app.frame()

    def start(path: Path) -> None:
        data = shares_frame(frame)  # one row per user: quick, and it reads the live state
        app.run_worker(lambda: _write_in_background(app, lambda: data, path, f"the shares of {data.height:,} users"),
                       thread=True, group="export", exit_on_error=False, description="exporting")

    _ask_path(app, "the shares table", suffix, start)


def save_screenshot(app: SfqApp) -> None:
    def save(path: Path) -> None:
        try:
            written = app.save_screenshot(path.name, str(path.parent))
        except OSError as exc:
            app.notify(str(exc), title="cannot save the screenshot", severity="error", timeout=8)
            return
        app.notify(written, title="screenshot saved", timeout=8)

    _ask_path(app, "a screenshot (SVG)", ".svg", save)


def _write_in_background(app: SfqApp, build: Callable[[], pl.DataFrame], path: Path, what: str) -> None:
    """On a worker: gather and write, then say where (or why not) in a notification."""
    try:
        write(build(), path)
    except InputError as exc:  # the system refused the write (a full disk, a folder gone)
        app.notify(str(exc), title="export failed", severity="error", timeout=10)
        return
    app.notify(f"{what} → {path}", title="exported", timeout=8)
