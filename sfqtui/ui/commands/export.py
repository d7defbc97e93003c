"""Export what the dashboard shows, from the palette: the event log's rows as listed (after
`d` and `f`), the shares table at the cursor, to CSV or Parquet; and a screenshot (SVG).

The path is asked for and checked before any work starts (sfqtui.paths, as every
command's outputs). What to write is fixed on the main thread, at once (the table's
length and the rows listed, which only ever grow or are replaced); the columns are then
gathered and written on a worker (sfqtui.runs.export_frames), so a log of millions of
rows does not stop the screen, and a failed write leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import polars as pl

from sfqtui.errors import InputError
from sfqtui.runs.export_frames import ListedRows, checked_output, log_frame, shares_frame, write
from sfqtui.ui.commands.host import CommandHost
from sfqtui.ui.widgets.ask import Ask


def _stamp(app: CommandHost) -> str:
    frame = app.frame()
    k = frame.k
    return f"sfqtui-{Path(frame.title).stem or 'run'}-{'start' if k < 0 else f'seq{frame.table.first_seq + k}'}-{datetime.now():%H%M%S}"


def _ask_path(app: CommandHost, what: str, suffix: str, then: Callable[[Path], None]) -> None:
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


def export_log(app: CommandHost, suffix: str) -> None:
    log = app.leading_log()
    if log.table is None or not len(log.table):
        app.notify("nothing to export yet: the log is empty", timeout=4)
        return
    rows = ListedRows.of(log.table, log.listed)
    what = f"the event log ({app.frame().options.log_description or 'all events'})"

    def start(path: Path) -> None:
        app.run_worker(lambda: _write_in_background(app, lambda: log_frame(rows), path, f"{rows.count:,} rows of {what}"),
                       thread=True, group="export", exit_on_error=False, description="exporting")

    _ask_path(app, what, suffix, start)


def export_shares(app: CommandHost, suffix: str) -> None:
    frame = app.frame()

    def start(path: Path) -> None:
        data = shares_frame(frame.table, frame.state)  # one row per user: quick, and it reads the live state
        app.run_worker(lambda: _write_in_background(app, lambda: data, path, f"the shares of {data.height:,} users"),
                       thread=True, group="export", exit_on_error=False, description="exporting")

    _ask_path(app, "the shares table", suffix, start)


def save_screenshot(app: CommandHost) -> None:
    def save(path: Path) -> None:
        try:
            written = app.save_screenshot(path.name, str(path.parent))
        except OSError as exc:
            app.notify(str(exc), title="cannot save the screenshot", severity="error", timeout=8)
            return
        app.notify(written, title="screenshot saved", timeout=8)

    _ask_path(app, "a screenshot (SVG)", ".svg", save)


def _write_in_background(app: CommandHost, build: Callable[[], pl.DataFrame], path: Path, what: str) -> None:
    """On a worker: gather and write, then say where (or why not) in a notification."""
    try:
        write(build(), path)
    except InputError as exc:  # the system refused the write (a full disk, a folder gone)
        app.notify(str(exc), title="export failed", severity="error", timeout=10)
        return
    app.notify(f"{what} → {path}", title="exported", timeout=8)
