"""What the policies that serve by integer bands share (llm-d's priorities, Dynamo's tiers, LiteLLM's priorities)."""

from __future__ import annotations

from sfqtui.core.schedulers.base import Scheduler, User, UserReading, Weights
from sfqtui.core.schedulers.policy import NOTHING_QUEUED


class Banded(Scheduler):
    """A scheduler whose requests wait in integer bands: it counts each user's requests queued
    in each band, so that a user's reading (the log's meter column) is the band it would be
    served from first, the highest or, with ``lowest_first``, the lowest."""

    lowest_first = False

    def __init__(self, weights: Weights | None = None) -> None:
        super().__init__(weights)
        self._held: dict[User, dict[int, int]] = {}  # per user: band -> requests queued in it

    def _hold(self, user: User, band: int) -> None:
        held = self._held.setdefault(user, {})
        held[band] = held.get(band, 0) + 1

    def _take(self, req: int, user: User, band: int) -> None:
        """Take a dispatched or cancelled request out of its user's queue and band count."""
        queue = self._queues[user]
        if queue[0] == req:
            queue.popleft()
        else:
            queue.remove(req)
        if not queue:
            self.backlogged -= 1
        held = self._held[user]
        held[band] -= 1
        if not held[band]:
            del held[band]

    def reading(self, user: User) -> UserReading:
        held = self._held.get(user)
        if not held:
            return None, NOTHING_QUEUED, None
        return None, min(held) if self.lowest_first else max(held), None
