"""What the dashboard opens, and the messages its loading worker posts.

The worker reads and replays on its own thread and only posts messages; the app appends
what they carry on its own thread, so no view ever sees a half-built table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from textual.message import Message

from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.core.log.table import EventBatch
from sfqtui.core.log.timeline import State
from sfqtui.trace.load import load_trace
from sfqtui.trace.sources import EventSource, LogFileSource, ReplaySource


@dataclass(frozen=True)
class Opening:
    """A trace to replay with ``config`` (slots None: the trace's suggestion), or a saved log."""

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

    def rerun(self, **changes: object) -> Opening:
        slots_given = self.slots_given or "slots" in changes
        return replace(self, config=replace(self.config, **changes), slots_given=slots_given)  # type: ignore[arg-type]


class Opened(Message):
    def __init__(self, generation: int, title: str, scheduler: str, slots: int | None) -> None:
        super().__init__()
        self.generation, self.title, self.scheduler, self.slots = generation, title, scheduler, slots


class EventsLoaded(Message):
    def __init__(self, generation: int, batch: EventBatch, checkpoints: list[State], fraction: float) -> None:
        super().__init__()
        self.generation, self.batch, self.checkpoints, self.fraction = generation, batch, checkpoints, fraction


class LoadFinished(Message):
    def __init__(self, generation: int) -> None:
        super().__init__()
        self.generation = generation


class LoadFailed(Message):
    def __init__(self, generation: int, reason: str) -> None:
        super().__init__()
        self.generation, self.reason = generation, reason


class ChartReady(Message):
    """The shares chart, binned over the complete log."""

    def __init__(self, generation: int, users: list[int], edges: list[float], series: dict[int, list[float]]) -> None:
        super().__init__()
        self.generation, self.users, self.edges, self.series = generation, users, edges, series


class Analysed(Message):
    """The audit of the complete log: the events that break an invariant (or why it failed)."""

    def __init__(self, generation: int, violations: list[int], checked: bool, failure: str | None = None) -> None:
        super().__init__()
        self.generation, self.violations, self.checked, self.failure = generation, violations, checked, failure
