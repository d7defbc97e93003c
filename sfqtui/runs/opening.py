"""What a run opens: a trace to replay with settings, or a saved event log."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.trace.load import load_trace
from sfqtui.trace.sources import EventSource, LogFileSource, ReplaySource


@dataclass(frozen=True)
class Opening:
    """A trace to replay with ``config`` (slots not given: the trace's suggestion), or a saved log."""

    path: Path
    is_log: bool
    config: ReplayConfig
    slots_given: bool = False

    def source(self) -> EventSource:
        if self.is_log:
            return LogFileSource(self.path)
        loaded = load_trace(self.path)
        config = self.config
        if not self.slots_given and loaded.suggested_slots:
            config = replace(config, slots=loaded.suggested_slots)
        return ReplaySource(loaded, config)

    @property
    def can_rerun(self) -> bool:
        """Only a trace can be replayed under other settings."""
        return not self.is_log

    def rerun(self, **changes: object) -> Opening:
        slots_given = self.slots_given or "slots" in changes
        return replace(self, config=replace(self.config, **changes), slots_given=slots_given)  # type: ignore[arg-type]
