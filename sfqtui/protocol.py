"""The live stream's shared vocabulary (semantics §8): what an event is, the gap event, and the
stream's typed SSE events (``run`` first on every connection, ``bye`` before a clean end).

The proxy (``sfqtui.proxy``), which publishes the stream, and the dashboard's client
(``sfqtui.live``), which follows it, both speak it; neither imports the other.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]
SCHEDULER = "sfq"
# SSE event types besides the default ("message", which carries the §7 events): a client
# that does not know a type skips it.
RUN = "run"  # first on every connection: {"run": id, "started": unix time}
BYE = "bye"  # last before the proxy ends the stream on purpose: {"run": id, "reason": "shutdown" or "new_run"}
# A replica of a group (--state): whether the group's SFQ bound holds, after run and on every change:
# {"run": id, "bound": "global" or "suspended", "since": unix time, "since_seq": the last seq then, "reason": text}
BOUND = "bound"
GLOBAL, SUSPENDED = "global", "suspended"  # the bound's words (suspended: the store is away, the replica serves on its own)
# A §7 event of kind merge (a replica back in its group, semantics §7) goes as this type, so a
# client that does not know the kind skips it (and sees a gap at its seq); it has its seq as id.
MERGE = "merge"


def gap_event(first_seq: int, t: float | None) -> Event:
    """The event that stands for what a client can no longer get: seq ``first_seq - 1``."""
    return {"seq": first_seq - 1, "t": t, "kind": "gap", "scheduler": SCHEDULER, "request_id": None, "user": None,
            "cost": None, "v": None, "meter": None, "deficit": None, "first_seq": first_seq}
