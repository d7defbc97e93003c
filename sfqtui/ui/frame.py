"""What every view draws: the rebuilt state at the cursor, and how the app is running."""

from __future__ import annotations

from dataclasses import dataclass

from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import State


@dataclass(frozen=True)
class Frame:
    table: EventTable
    state: State
    k: int
    title: str
    slots: int | None
    loaded: float
    loading: bool
    playing: bool
    speed: float

    @property
    def picked(self) -> int | None:
        """The user code dispatched at this event, if it is a dispatch."""
        if 0 <= self.k < len(self.table) and self.table.kind_name(self.k) == "dispatch":
            return self.table.user[self.k]
        return None

    @property
    def has_meters(self) -> bool:
        return self.table.scheduler in ("sfq", "sfq-reset")
