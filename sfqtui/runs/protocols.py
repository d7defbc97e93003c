"""What the dashboard needs from an opening and from the source it opens, whichever it is:
a trace to replay, a saved event log or a live proxy's stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from sfqtui.core.log.table import EventBatch
from sfqtui.live.source import Notice


class RunSource(Protocol):
    """A run's events in batches, each with the fraction loaded so far (None: the source
    never ends); a source that never ends says what else happens in notices."""

    scheduler: str
    title: str
    metadata: dict[str, Any]

    def batches(self) -> Iterator[tuple[EventBatch | Notice, float | None]]: ...


class RunOpening(Protocol):
    """What a run opens. Only a trace (runs.opening.Opening) can be re-run under other settings."""

    @property
    def title(self) -> str: ...

    @property
    def scheduler(self) -> str: ...

    @property
    def is_log(self) -> bool: ...

    @property
    def is_live(self) -> bool: ...

    @property
    def can_rerun(self) -> bool: ...

    def source(self) -> RunSource: ...
