"""``--record`` for a live stream: one event log per proxy run.

A restarted proxy numbers its events from 0 again, so one log cannot hold two runs
(``sfqtui check`` would see the seq restart and the time go back). The first run
recorded goes to PATH, the n-th to PATH with ``.run<n>`` before its suffix (x.parquet,
x.run2.parquet, x.run3.parquet, ...); each log's metadata names its run (``run``). A run
that brings no event writes no file and takes no number.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa

from sfqtui.attach.bound import Bound
from sfqtui.attach.stream import Gap, RunStarted, Status
from sfqtui.attach.stream_log import StreamLogWriter


def run_log_path(path: Path, n: int) -> Path:
    """Where the n-th proxy run recorded (from 1) is saved."""
    return path if n == 1 else path.with_name(f"{path.stem}.run{n}{path.suffix}")


class RunLogs:
    """The logs of one recording. ``saved``: (path, events) of each log written;
    ``problems``: one line for each that could not be written as asked."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = Path(path)
        self.saved: list[tuple[Path, int]] = []
        self.problems: list[str] = []
        self._source = source
        self._run: RunStarted | None = None
        self._writer: StreamLogWriter | None = None
        self._count = 0
        self._bound: list[Bound] = []  # changes of the bound before the run's first event, for its log
        self._lock = threading.Lock()  # the loading thread writes; the command closes what is left when the app is gone
        self._closed = False

    def write(self, item: pa.Table | Gap | Status | RunStarted | Bound) -> None:
        with self._lock:
            if self._closed:
                return
            if isinstance(item, RunStarted):
                self._finish()
                self._run, self._bound = item, []
                return
            if isinstance(item, Bound) and self._writer is None:
                self._bound.append(item)  # a run with no event yet has no log yet
                return
            if isinstance(item, Status) or (isinstance(item, pa.Table) and not item.num_rows):
                return
            if self._writer is None:
                self._count += 1
                self._writer = StreamLogWriter(run_log_path(self.path, self._count), self._source, self._run)
                for bound in self._bound:
                    self._writer.write(bound)
            self._writer.write(item)

    @property
    def problem_now(self) -> str | None:
        """What goes wrong with the log being written, if anything."""
        writer = self._writer
        return writer.problem if writer is not None else None

    def _finish(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        writer.close()
        if writer.saved_to is not None:
            self.saved.append((writer.saved_to, writer.rows))
        if writer.problem:
            self.problems.append(writer.problem)

    def close(self) -> None:
        """Save the log of the run being recorded (once; later items are ignored)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._finish()
