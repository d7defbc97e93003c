"""What a run opens: a trace to replay with settings, or a saved event log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.errors import InputError
from sfqtui.runs.protocols import RunOpening
from sfqtui.trace.eventlog import read_log_schema
from sfqtui.trace.joined import joined_trace
from sfqtui.trace.load import load_trace, read_parquet_header
from sfqtui.trace.schema import LOG_COLUMNS
from sfqtui.trace.sources import LogFileSource, ReplaySource


def is_event_log(path: Path) -> bool:
    """Whether a file is an event log (checked to be one this version reads) or a trace;
    InputError when it is neither readable nor Parquet."""
    read_parquet_header(path, what="trace or event log")
    if not set(LOG_COLUMNS) <= set(pq.read_schema(path).names):
        return False
    read_log_schema(path)
    return True


def one_path(paths: Sequence[Path]) -> Path:
    """The file a command opens: an event log given alone, or the trace that ``paths`` make
    (sfqtui.trace.joined); InputError for a log among several files."""
    if len(paths) > 1:
        for path in paths:
            if path.exists() and is_event_log(path):
                raise InputError(f"{path} is an event log: several files are read as one trace, so give traces only")
    return joined_trace(paths)


@dataclass(frozen=True)
class Opening:
    """A trace to replay with ``config`` (slots not given: the trace's suggestion), or a saved log."""

    path: Path
    is_log: bool
    config: ReplayConfig
    slots_given: bool = False

    def source(self) -> LogFileSource | ReplaySource:
        if self.is_log:
            return LogFileSource(self.path)
        loaded = load_trace(self.path)
        config = self.config
        if not self.slots_given and config.capacity is None and loaded.suggested_slots:
            config = replace(config, slots=loaded.suggested_slots)
        return ReplaySource(loaded, config)

    @property
    def title(self) -> str:
        return str(self.path)

    @property
    def scheduler(self) -> str:
        return self.config.scheduler

    def run_state(self) -> None:
        return None  # a trace or a saved log ends: its run holds only its events

    @property
    def can_rerun(self) -> bool:
        """Only a trace can be replayed under other settings."""
        return not self.is_log

    def rerun(self, **changes: Any) -> Opening:
        """The same trace under other settings (``changes``: ReplayConfig fields); another
        estimator prices even a trace's recorded costs anew (a what-if)."""
        slots_given = self.slots_given or "slots" in changes
        if "slots" in changes or "engine" in changes:
            changes = {"capacity": None, **changes}  # a recording's capacity gives way to the slots asked for: a what-if
        if "estimator" in changes:
            changes = {"reprice": True, **changes}
        if any(getattr(self.config, name) != value for name, value in changes.items()):
            changes = {"as_recorded": False, **changes}  # not the recording as it ran: its engine starts are not replayed
        return replace(self, config=replace(self.config, **changes), slots_given=slots_given)


def rerunnable(opening: RunOpening) -> Opening | None:
    """The opening as a trace that can be replayed under other settings; None for a saved log or a live stream."""
    return opening if isinstance(opening, Opening) and opening.can_rerun else None
