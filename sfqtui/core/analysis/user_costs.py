"""Per user, the charged against the actual cost of its measured dispatches (semantics §10).

The one computation both calibrations feed: from a replay (calibration.py, the actual
cost from the trace's tokens) and from a log alone (log_calibration.py, the actual cost
from the charge and the recorded outputs). Each hands it the same shape, columns of
(user code, charged, actual) over the dispatches whose actual cost is known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class UserCalibration:
    user: str
    dispatched: int
    charged: float
    actual: float
    share_charged: float
    share_actual: float

    @property
    def bias(self) -> float | None:
        return self.charged / self.actual if self.actual else None

    @property
    def share_gain(self) -> float:
        """Share of actual cost minus share of charged cost: > 0 when the estimator's errors favour this user."""
        return self.share_actual - self.share_charged

    def as_dict(self) -> dict[str, object]:
        return {
            "user": self.user, "dispatched": self.dispatched, "charged_cost": self.charged, "actual_cost": self.actual,
            "bias": self.bias, "share_charged": self.share_charged, "share_actual": self.share_actual,
            "share_gain": self.share_gain,
        }


class UserCosts:
    """Per user code: measured dispatches, their charged and their actual cost, summed in
    the order they are fed; the totals over users add them in the order users first came."""

    def __init__(self, users: int) -> None:
        self.dispatched = [0] * users
        self.charged = [0.0] * users
        self.actual = [0.0] * users
        self._arrival: list[int] = []  # user codes, in the order of their first measured dispatch

    def feed(self, users: Sequence[int], charged: Sequence[float], actual: Sequence[float]) -> None:
        dispatched, charged_of, actual_of = self.dispatched, self.charged, self.actual
        for u, c, a in zip(users, charged, actual):
            if not dispatched[u]:
                self._arrival.append(u)
            dispatched[u] += 1
            charged_of[u] += c
            actual_of[u] += a

    def users(self, names: Sequence[str]) -> list[UserCalibration]:
        """The users with a measured dispatch, worst bias first (furthest from 1 either way);
        a user with no actual cost (bias undefined) before all."""
        total_charged = sum(self.charged[u] for u in self._arrival)
        total_actual = sum(self.actual[u] for u in self._arrival)
        users = [
            UserCalibration(names[u], n, self.charged[u], self.actual[u],
                            self.charged[u] / total_charged if total_charged else 0.0,
                            self.actual[u] / total_actual if total_actual else 0.0)
            for u, n in enumerate(self.dispatched) if n
        ]
        users.sort(key=lambda u: -abs(math.log(u.bias)) if u.bias else -math.inf)
        return users
