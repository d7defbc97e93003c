"""What the dashboard needs from an opening, whichever it is: a trace to replay, a saved
event log or a live proxy's stream (the source it opens: sfqtui.trace.sources.EventSource)."""

from __future__ import annotations

from typing import Protocol

from sfqtui.runs.stream_opening import LiveState
from sfqtui.trace.sources import EventSource


class RunOpening(Protocol):
    """What a run opens. Only a trace (runs.opening.Opening) can be re-run under other settings."""

    @property
    def title(self) -> str: ...

    @property
    def scheduler(self) -> str: ...

    @property
    def can_rerun(self) -> bool: ...

    def source(self) -> EventSource: ...

    def run_state(self) -> LiveState | None:
        """What a run of it holds besides its events: a live stream's connection, proxy run
        and audit (sfqtui.runs.run.LiveRun); None for a source that ends."""
        ...
