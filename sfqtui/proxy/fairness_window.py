"""The proxy's fairness gauge: Jain's index over the last dispatches, each user judged on the
dispatches at which it was waiting.

At each dispatch the users with a request waiting (the one dispatched included) are owed the
dispatch's cost between them in proportion to their weights: each is owed ``cost / W`` per
unit of weight, W being the weights of the users waiting then summed. A user's credit over the
window is what it was owed per weight at the dispatches it waited for, and its x is the cost
per weight it was dispatched divided by that credit: 1 when it got its share, 0 when it got
nothing while waiting. x is capped at 1: a user that got more than its share (a light user's
request goes ahead of the backlogged ones, as SFQ means it to) took it from the others, whose
x then shows it; a user that asks for less than its share is served at once and reads 1, so it
never lowers the index. Jain's index (sum x)^2 / (n sum x^2) over the n users that waited at
some dispatch of the window is then 1 when every waiting user got its share, and drops as
waiting users get less.

Credits are summed lazily: a running total of what was owed per weight at each dispatch
(``owed``, one entry per dispatch of the window) and, per user, the intervals of dispatches
(by number) through which it waited, so a dispatch costs O(1) whatever the number of users.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections import deque
from dataclasses import dataclass, field

from sfqtui.protocol import Event

JAIN_WINDOW = 1000


@dataclass
class _User:
    weight: float = 1.0
    queued: int = 0
    since: int | None = None  # while queued: waiting at the dispatches after this one
    waits: list[tuple[int, int]] = field(default_factory=list)  # (after, until): waited at dispatches after+1..until


class FairnessWindow:
    """Jain's index over the last ``size`` dispatches, fed the §7 events in their order (``see``):
    arrivals and cancellations move a user's queue, dispatches its queue and its charge."""

    def __init__(self, size: int = JAIN_WINDOW) -> None:
        self._size = size
        self._dispatches = 0
        self._owed: deque[float] = deque([0.0])  # owed per weight, summed, after each dispatch from the window's start on
        self._recent: deque[tuple[str, float]] = deque()  # (user, cost per weight) of the window's dispatches
        self._got: dict[str, float] = {}
        self._got_count: Tally[str] = Tally()
        self._users: dict[str, _User] = {}
        self._waiting = 0  # users with a request queued
        self._waiting_weight = 0.0  # their weights summed

    def see(self, event: Event) -> None:
        kind, user = event["kind"], event["user"]
        if user is None:
            return  # an idle_reset names nobody
        if kind == "arrive":
            self._arrive(user, event.get("weight") or 1.0)
        elif kind == "dispatch":
            self._dispatch(user, event["cost"] or 0.0, event.get("weight") or 1.0)
        elif kind == "cancel":
            self._leave(user)

    def _arrive(self, user: str, weight: float) -> None:
        state = self._users.setdefault(user, _User(weight))
        if state.queued == 0:
            state.weight, state.since = weight, self._dispatches
            self._waiting += 1
            self._waiting_weight += weight
        state.queued += 1

    def _leave(self, user: str) -> None:
        state = self._users.get(user)
        if state is None or state.since is None:
            return
        state.queued -= 1
        if state.queued == 0:
            self._waiting -= 1
            self._waiting_weight = self._waiting_weight - state.weight if self._waiting else 0.0  # no float residue once none waits
            first = self._dispatches - len(self._recent)
            state.waits = [wait for wait in state.waits if wait[1] > first]  # what the window no longer covers
            if self._dispatches > state.since:  # else cancelled before any dispatch: it waited at none
                state.waits.append((state.since, self._dispatches))
            state.since = None

    def _dispatch(self, user: str, cost: float, weight: float) -> None:
        state = self._users.get(user)
        if state is None or state.since is None:
            self._arrive(user, weight)  # its arrival came before we followed the stream
        elif weight != state.weight:
            self._waiting_weight += weight - state.weight
        self._users[user].weight = weight
        self._dispatches += 1
        self._owed.append(self._owed[-1] + cost / self._waiting_weight)
        self._recent.append((user, cost / weight))
        self._got[user] = self._got.get(user, 0.0) + cost / weight
        self._got_count[user] += 1
        if len(self._recent) > self._size:
            self._slide()
        self._leave(user)

    def _slide(self) -> None:
        self._owed.popleft()
        old, amount = self._recent.popleft()
        self._got_count[old] -= 1
        if self._got_count[old] == 0:
            del self._got_count[old], self._got[old]  # no float residue for a user no longer served
        else:
            self._got[old] -= amount

    def waited(self) -> list[str]:
        """The users that waited at some dispatch of the window (the ones the index compares); forgets the others."""
        first = self._dispatches - len(self._recent)
        for name in list(self._users):
            state = self._users[name]
            state.waits = [wait for wait in state.waits if wait[1] > first]
            if not state.waits and state.since is None:
                del self._users[name]
        return sorted(name for name, state in self._users.items() if self._credit(state) > 0.0)

    def _credit(self, state: _User) -> float:
        """What the user was owed per weight at the window's dispatches it waited at."""
        first = self._dispatches - len(self._recent)
        waits = state.waits if state.since is None else [*state.waits, (state.since, self._dispatches)]
        credit = 0.0
        for after, until in waits:
            if until > max(after, first):
                credit += self._owed[until - first] - self._owed[max(after, first) - first]
        return credit

    def jain(self) -> float | None:
        """None before the first dispatch with a cost."""
        shares = [min(1.0, self._got.get(name, 0.0) / self._credit(self._users[name])) for name in self.waited()]
        squares = sum(x * x for x in shares)
        return None if squares == 0.0 else sum(shares) ** 2 / (len(shares) * squares)
