"""What a trace file's Parquet metadata says of the run it was made for: the slots, and for a proxy's
recording its capacity and scheduler. Plain dicts, no dataframes: the command line reads these
before it knows whether it loads a trace (the proxy's command never does)."""

from __future__ import annotations

from typing import Any

from sfqtui.core.replay.recorded import RecordedLimits


def suggested_slots(metadata: dict[str, Any]) -> int | None:
    """The slot count a trace was made for (scenarios and importers record one)."""
    slots = metadata.get("slots")
    return int(slots) if isinstance(slots, int) and slots > 0 else None


def recorded_limits(metadata: dict[str, Any]) -> RecordedLimits | None:
    """The capacity a proxy's recording under ``--slots auto`` kept (None: fixed slots, or not a recording)."""
    return RecordedLimits.from_metadata(metadata.get("capacity"))


def recorded_scheduler(metadata: dict[str, Any]) -> str | None:
    """The scheduler a proxy's recording was made under (one made before recordings named it: sfq, the proxy's
    default and a group's only one); None: not a recording."""
    if metadata.get("source") != "sfqtui proxy":
        return None
    return str(metadata.get("scheduler", "sfq"))
