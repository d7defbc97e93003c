"""Where an audit starts when a log does not start at seq 0 (docs/semantics.md §7, "Audit from a snapshot").

A recording that joined a proxy late holds only the events after seq N; the proxy's state
at N (its ``/v1/sfq/state``) is kept in the log's metadata as ``snapshot``. The audit takes
that state as given, the way a log from seq 0 takes the empty state: each user's meter S_i
and weight, v, and how many of each user's requests were queued and in flight. Everything
after N is re-derived from the rows as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sfqtui.errors import InputError


@dataclass(frozen=True)
class UserAtSnapshot:
    meter: float
    queued: int
    inflight: int


@dataclass(frozen=True)
class Snapshot:
    seq: int  # the state is as of this event: the log's rows start at seq + 1 (after a ``gap`` row at seq)
    v: float
    users: dict[str, UserAtSnapshot]

    @classmethod
    def from_metadata(cls, data: Any) -> Snapshot | None:
        """The ``snapshot`` of a log's metadata (None: the log starts at seq 0); a malformed one is refused."""
        if data is None:
            return None
        try:
            users = {str(row["user"]): UserAtSnapshot(float(row["meter"]), int(row.get("queued") or 0), int(row.get("inflight") or 0))
                     for row in data.get("users", [])}
            return cls(int(data["seq"]), float(data["v"]), users)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the log's snapshot (its metadata) is malformed ({exc!r}): it needs seq, v and users "
                             "with user, meter, queued and inflight (docs/semantics.md §7)") from None
