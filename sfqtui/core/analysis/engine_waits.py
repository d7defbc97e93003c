"""Each user's waits in a log with `start` rows (a replay on the engine model): how long its
requests waited to be dispatched (in the balancer's queue), then in an engine's queue until
they started running, and the two together.

Quantiles are nearest-rank, as compare's other waits (``UserFigures.wait_quantile``).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Hashable
from dataclasses import dataclass, field

from sfqtui.core.log.rows import LogRows

QUANTILES = (0.5, 0.9)


def quantile(values: array, q: float) -> float | None:
    """The nearest-rank ``q`` quantile (None: no value)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class UserWaits:
    """One user's waits, in seconds, one per request that started."""

    to_dispatch: array = field(default_factory=lambda: array("d"))  # arrival to dispatch
    in_engine: array = field(default_factory=lambda: array("d"))  # dispatch to start: the engine's queue
    to_start: array = field(default_factory=lambda: array("d"))  # arrival to start

    def as_dict(self) -> dict[str, float | None]:
        figures: dict[str, float | None] = {}
        for name in ("to_dispatch", "in_engine", "to_start"):
            for q in QUANTILES:
                figures[f"{name}_p{round(q * 100)}"] = quantile(getattr(self, name), q)
        return figures


class EngineWaits:
    """The waits of a log fed chunk by chunk; ``users`` holds them per user."""

    def __init__(self) -> None:
        self.users: dict[str, UserWaits] = {}
        self._arrived: dict[Hashable, float] = {}
        self._dispatched: dict[Hashable, tuple[float, float]] = {}  # request: (arrival, dispatch)

    def feed(self, rows: LogRows) -> None:
        arrived, dispatched, users = self._arrived, self._dispatched, self.users
        for kind, user, rid, t in zip(rows.kind, rows.user, rows.request_id, rows.t):
            if kind == "arrive":
                arrived[rid] = t
            elif kind == "dispatch":
                dispatched[rid] = (arrived.pop(rid, t), t)
            elif kind == "start" and user is not None:
                arrival, dispatch = dispatched.pop(rid, (t, t))
                waits = users.get(user)
                if waits is None:
                    waits = users[user] = UserWaits()
                waits.to_dispatch.append(dispatch - arrival)
                waits.in_engine.append(t - dispatch)
                waits.to_start.append(t - arrival)
            elif kind == "cancel":
                arrived.pop(rid, None)

    def overall(self) -> UserWaits:
        """Every user's waits together."""
        every = UserWaits()
        for waits in self.users.values():
            every.to_dispatch.extend(waits.to_dispatch)
            every.in_engine.extend(waits.in_engine)
            every.to_start.extend(waits.to_start)
        return every
