"""A recording's capacity (docs/semantics.md §13): the slots a proxy under ``--slots auto`` had
as they changed, replayed as they were.

A recording keeps each upstream's limit as it changed (its trace metadata's ``capacity``:
time, seq, upstream, limit and reason of every change, the first limits included); the slots
are the limits' sum. ``RecordedLimits`` is that table, read from the metadata;
``RecordedCapacity`` is the replay loop's ``Capacity`` over it: each change is applied at its
time, a rise dispatches at once, a fall never preempts (the loop holds dispatches back until
enough requests complete), as the proxy's dispatcher did.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sfqtui.core.events import REASONS
from sfqtui.core.replay.servers import INF, Change
from sfqtui.errors import InputError

COLUMNS = ("t", "seq", "upstream", "limit", "reason")  # the metadata's capacity table, one list per column


@dataclass(frozen=True)
class RecordedLimits:
    """Each upstream's limit as it changed: ``changes`` (t, upstream index into ``upstreams``,
    new limit, reason), in the order they were made; ``slots`` as the recording names them
    (``auto`` or ``auto:MAX``)."""

    upstreams: tuple[str, ...]
    changes: tuple[tuple[float, int, int, str], ...]
    slots: str = "auto"

    @classmethod
    def from_metadata(cls, found: object) -> RecordedLimits | None:
        """The table a recording's metadata ``capacity`` holds (None: the recording has none);
        InputError for one that is malformed."""
        if found is None:
            return None
        if not isinstance(found, Mapping) or not all(isinstance(found.get(c), list) for c in COLUMNS):
            raise InputError(f"the trace's metadata 'capacity' must hold the lists {', '.join(COLUMNS)} (docs/traces.md)")
        columns = [found[c] for c in COLUMNS]
        if len({len(c) for c in columns}) != 1 or not columns[0]:
            raise InputError("the trace's metadata 'capacity' must hold lists of one length, at least one change")
        upstreams: dict[str, int] = {}
        changes: list[tuple[float, int, int, str]] = []
        last = -INF
        for t, _seq, upstream, limit, reason in zip(*columns, strict=True):
            if not (isinstance(t, int | float) and t >= last and isinstance(upstream, str)
                    and isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1 and reason in REASONS):
                raise InputError(f"the trace's metadata 'capacity': change {len(changes)} ({t!r}, {upstream!r}, {limit!r}, {reason!r}) "
                                 "must have a time not before the last, an upstream, a limit >= 1 and a known reason")
            last = float(t)
            changes.append((float(t), upstreams.setdefault(upstream, len(upstreams)), limit, reason))
        return cls(tuple(upstreams), tuple(changes), str(found.get("slots", "auto")))

    def totals(self) -> list[int]:
        """The slots (the limits' sum) after each change."""
        limits = [0] * len(self.upstreams)
        total, totals = 0, []
        for _, upstream, limit, _ in self.changes:
            total += limit - limits[upstream]
            limits[upstream] = limit
            totals.append(total)
        return totals

    @property
    def first(self) -> int:
        """The slots once every upstream had its first limit."""
        seen: set[int] = set()
        for (_, upstream, _, _), total in zip(self.changes, self.totals(), strict=True):
            seen.add(upstream)
            if len(seen) == len(self.upstreams):
                return total
        return self.totals()[-1]

    def describe(self) -> str:
        return capacity_said(self.metadata())

    def at(self, t: float) -> dict[str, int]:
        """Each upstream's limit in force at time ``t`` (after the changes made then), the upstreams seen so far."""
        limits: dict[str, int] = {}
        for _, upstream, limit, _ in self.changes[:bisect_right(self.changes, t, key=lambda change: change[0])]:
            limits[self.upstreams[upstream]] = limit
        return limits

    def metadata(self) -> dict[str, Any]:
        """What a log replayed on this capacity records of it."""
        return {"slots": self.slots, "upstreams": list(self.upstreams), "changes": len(self.changes),
                "least": min(self.totals()), "most": max(self.totals())}


def capacity_said(metadata: Mapping[str, Any]) -> str:
    """A log's ``capacity`` (``RecordedLimits.metadata``) in words: 'slots as recorded (auto: 2 to 17, 35 changes)'."""
    return (f"slots as recorded ({metadata.get('slots')}: {metadata.get('least', 0):,} to {metadata.get('most', 0):,}, "
            f"{metadata.get('changes', 0):,} changes)")


class RecordedCapacity:
    """The replay loop's ``Capacity`` over a recording's limits: no slot before the first
    change, then each change at its time (the loop writes its limit row). ``codes``: the code
    each upstream of ``recorded`` has in the replay's rows (None: its index there)."""

    def __init__(self, recorded: RecordedLimits, codes: Sequence[int] | None = None) -> None:
        self._changes = recorded.changes
        self._codes = range(len(recorded.upstreams)) if codes is None else codes
        self._limits = [0] * len(recorded.upstreams)
        self._next = 0
        self.total = 0
        self.next_t = self._changes[0][0] if self._changes else INF

    def first(self) -> list[Change]:
        return []  # every limit, the first ones too, is a change at the time it was recorded

    def wake(self, now: float) -> None:
        pass  # the changes are known in advance: nothing the replay does moves them

    def stir(self, now: float) -> None:
        pass

    def change(self, now: float, busy: bool) -> list[Change]:
        changes, made = self._changes, []
        while self._next < len(changes) and changes[self._next][0] <= now:
            _, upstream, limit, reason = changes[self._next]
            self.total += limit - self._limits[upstream]
            self._limits[upstream] = limit
            made.append((self._codes[upstream], limit, reason))
            self._next += 1
        self.next_t = changes[self._next][0] if self._next < len(changes) else INF
        return made
