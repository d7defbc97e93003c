"""Saves what an EventStream yields for one proxy run as an event log (semantics §7) that ``sfqtui replay`` opens.

Batches are gathered into large row groups. A gap becomes a row of kind ``gap`` with
seq ``first_seq - 1``, so the log's seq column stays increasing and shows where events
are missing. The file appears when the writer closes (the event log writer's atomic
move), with everything received, also when the stream was interrupted; nothing is
written if no event came. The metadata names the proxy run, and, for a replica of a
group, each change of the group's bound (sfqtui.attach.bound, ``BOUND_KEY``).

A recording that joins late (the proxy's ring no longer holds seq 0: the stream opens with
a gap) starts from the proxy's state at seq N, kept in the metadata as ``snapshot``
(docs/semantics.md §7): its first row is the gap at N, carrying that state's v, and the
events from N + 1 follow, so ``sfqtui check`` audits it from there.

A file that cannot be written (its folder removed, the disk full) does not lose what is
still in memory: the log goes on in a file of the temporary folder instead (after a gap
row when what was already written is lost with the first file), and ``problem`` says so.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from sfqtui import __version__
from sfqtui.attach.bound import BOUND_KEY, Bound, in_group, of_group, recorded_change
from sfqtui.attach.stream import EVENT_SCHEMA, Gap, RunStarted, Status
from sfqtui.core.numbers import count, counted
from sfqtui.errors import InputError
from sfqtui.protocol import StateSnapshot, gap_event
from sfqtui.trace.eventlog import EventLogWriter
from sfqtui.trace.schema import LOG_FORMAT

ROW_GROUP = 1 << 16


# What a write the system refuses raises: the OSError itself, or (through sfqtui.paths.atomic_output) an InputError from it.
WRITE_FAILURES = (OSError, InputError)


def _why(exc: BaseException) -> str:
    """The system's words for a failed write (Arrow's and atomic_output's own messages also name files)."""
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    if isinstance(cause, OSError) and cause.errno:
        return os.strerror(cause.errno)
    return str(cause or exc) or type(exc).__name__


class StreamLogWriter:
    def __init__(self, path: Path, source: str, run: RunStarted | None = None) -> None:
        self.path = Path(path)  # where the log is written (the fallback, once ``path`` failed)
        self.saved_to: Path | None = None  # where the log is, once closed
        self.lost = 0  # events that could not be saved
        self.rows = 0  # events written to the file
        self._failures: list[tuple[Path, str]] = []  # each file that could not be written, and why
        self._source = source
        self._run = run
        self._writer: EventLogWriter | None = None
        self._files = ExitStack()
        self._scheduler: str | None = None
        self._held: list[pa.Table] = []
        self._held_rows = 0
        self._last_t: float | None = None
        self._slots: int | None = run.state.get("slots") if run is not None and run.state is not None else None
        self._bound_changes: list[dict[str, Any]] = []
        self._group = in_group(run.state) if run is not None else None  # a lone proxy's log has no replica column
        self._closed = False
        self._snapshot: StateSnapshot | None = None  # the proxy's state the log starts from (a late join)

    @property
    def problem(self) -> str | None:
        """What went wrong writing the log, in one line (None: nothing)."""
        if not self._failures:
            return None
        (first, why), *fallback = self._failures
        text = f"could not write {first} ({why})"
        if fallback:
            return f"{text}, nor {fallback[0][0]} ({fallback[0][1]}): {self._lost()}"
        if len(self._failures) == 1 and self.path == first:
            return f"{text}: {self._lost()}"
        where = f"saved {counted(self.rows, 'event')} to {self.path} instead" if self._closed else f"recording to {self.path} instead"
        return f"{text}; {where}" + (f" ({count(self.lost)} written before {'is' if self.lost == 1 else 'are'} lost)" if self.lost else "")

    def _lost(self) -> str:
        return f"{counted(self.lost, 'event')} {'is' if self.lost == 1 else 'are'} lost"

    @property
    def _dead(self) -> bool:
        """Neither the file nor the fallback can be written."""
        return len(self._failures) > 1 or (len(self._failures) == 1 and self.path == self._failures[0][0])

    def write(self, item: pa.Table | Gap | Status | RunStarted | Bound) -> None:
        """Take one item of the stream: batches and gaps are saved, a change of the bound is
        noted for the metadata; the others are not events."""
        if isinstance(item, Bound):
            self._bound_changes.append(recorded_change(item, self._event_time(item)))
        elif isinstance(item, Gap):
            state = item.state  # None: it could not be read
            if state is not None:
                self._slots = state.get("slots", self._slots)
            row = gap_event(item.first_seq, item.t if item.t is not None else self._last_t)
            if state is not None and self._starts_at(item):
                row = {**gap_event(state["seq"] + 1, item.t if item.t is not None else state.get("t")), "v": state["v"]}
            row["scheduler"] = self._scheduler or (state.get("scheduler") if state else None) or row["scheduler"]
            self._hold(pa.Table.from_pylist([row], schema=EVENT_SCHEMA))
        elif isinstance(item, pa.Table) and item.num_rows:
            if self._snapshot is not None and item["seq"][0].as_py() <= self._snapshot["seq"]:
                item = item.filter(pc.greater(item["seq"], self._snapshot["seq"]))  # already in the snapshot
                if not item.num_rows:
                    return
            self._scheduler = self._scheduler or item["scheduler"][0].as_py()
            self._last_t = item["t"][-1].as_py()
            self._hold(item)

    def _starts_at(self, gap: Gap) -> bool:
        """Whether the log starts at this gap's state (nothing before it; a state that says
        seq, v and users, not older than the first event the stream still has): then it is
        the log's snapshot."""
        state = gap.state
        if self.rows or self._held or self.lost or state is None or not all(k in state for k in ("seq", "v", "users")):
            return False
        if not isinstance(state["seq"], int) or state["seq"] < gap.first_seq - 1:
            return False
        self._snapshot = cast("StateSnapshot", {key: state[key] for key in ("seq", "t", "v", "inflight", "users") if key in state})
        return True

    def _event_time(self, bound: Bound) -> float:
        """When a change of the bound came, on the events' clock (seconds since the run started)."""
        started = self._run.started if self._run is not None else None
        if bound.since is not None and started is not None:
            return max(bound.since - started, 0.0)
        return self._last_t or 0.0

    def _hold(self, table: pa.Table) -> None:
        if self._dead:
            self.lost += table.num_rows
            return
        self._held.append(table)
        self._held_rows += table.num_rows
        if self._held_rows >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._held_rows:
            return
        table = of_group(pa.concat_tables(self._held), self._group)
        self._held, self._held_rows = [], 0
        try:
            if self._writer is None:
                self._writer = self._files.enter_context(EventLogWriter(self.path, self._metadata(table["scheduler"][0].as_py())))
            self._writer.write(table)
        except WRITE_FAILURES as exc:
            self._failed(exc, table)
            return
        self.rows += table.num_rows

    def _failed(self, exc: Exception, table: pa.Table) -> None:
        """The file cannot be written: what it held is lost; the rest (``table`` on) goes to a fallback file."""
        self._discard_writer(exc)
        self._failures.append((self.path, _why(exc)))
        self.lost += self.rows
        self.rows = 0
        if len(self._failures) > 1:  # the fallback failed too
            self.lost += table.num_rows
            return
        try:
            fd, name = tempfile.mkstemp(prefix=f"{self.path.stem}-", suffix=self.path.suffix)
        except OSError as no_fallback:
            self._failures.append((Path(tempfile.gettempdir()), _why(no_fallback)))
            self.lost += table.num_rows
            return
        os.close(fd)
        self.path = Path(name)
        if self.lost:  # the new log says where its events start
            row = gap_event(table["seq"][0].as_py(), table["t"][0].as_py())
            row["scheduler"] = table["scheduler"][0].as_py()
            table = pa.concat_tables([of_group(pa.Table.from_pylist([row], schema=EVENT_SCHEMA), self._group), table])
        self._held, self._held_rows = [table], table.num_rows
        self._flush()

    def _discard_writer(self, exc: Exception) -> None:
        files, self._files, self._writer = self._files, ExitStack(), None
        try:
            files.__exit__(type(exc), exc, exc.__traceback__)  # the writer removes its partial file
        except WRITE_FAILURES:
            pass

    def _metadata(self, scheduler: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"sfqtui_version": __version__, "format": LOG_FORMAT, "scheduler": scheduler,
                                "source": f"live stream {self._source}"}
        if self._slots is not None:
            meta["slots"] = self._slots
        if self._snapshot is not None and not self.lost:
            meta["snapshot"] = self._snapshot
        if self._run is not None and self._run.run is not None:
            meta["run"] = self._run.run
            if self._run.started is not None:
                meta["run_started"] = self._run.started
        return meta

    def close(self) -> None:
        """Write what is held and move the file into place (once); ``problem`` says what failed."""
        if self._closed:
            return
        self._flush()
        if self._writer is not None and self._bound_changes:  # known only at the end: the footer takes them
            self._writer.add_metadata({BOUND_KEY: self._bound_changes})
        try:
            self._files.close()
        except WRITE_FAILURES as exc:  # the move into place, or the last row group
            self._files = ExitStack()
            self._failures.append((self.path, _why(exc)))
            self.lost += self.rows
            self.rows = 0
        self._closed = True
        if self.rows:
            self.saved_to = self.path
        elif len(self._failures) == 1 and self.path != self._failures[0][0]:
            self.path.unlink(missing_ok=True)  # a fallback nothing was written to

    def __enter__(self) -> StreamLogWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        # Saved also when the stream was interrupted: the events received so far are a correct log.
        self.close()
