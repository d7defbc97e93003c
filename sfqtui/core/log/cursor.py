"""The cursor over a (possibly still growing) log and every way of moving it.

A cursor stands at an event index; it can also be put at a time (the last event at or
before it) or at the n-th dispatch, which is how runs step in lockstep (lockstep.py).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import count

_TIME = re.compile(r"^\s*(?:t\s*=\s*)?([0-9]*\.?[0-9]+)\s*s\s*$|^\s*t\s*=\s*([0-9]*\.?[0-9]+)\s*$")


class Cursor:
    """Holds the current event index ``k`` (-1: before the first event) and moves it.

    Every move returns the new index, or None when there is nothing to go to (the cursor
    then stays where it was).
    """

    def __init__(self, table: EventTable) -> None:
        self.table = table
        self.k = -1
        self.violations: Sequence[int] = ()

    @property
    def last(self) -> int:
        return len(self.table) - 1

    def _go(self, k: int | None) -> int | None:
        if k is None:
            return None
        self.k = max(-1, min(k, self.last))
        return self.k

    def step(self, n: int) -> int | None:
        target = max(-1, min(self.k + n, self.last))
        return None if target == self.k else self._go(target)

    def at_event(self, k: int) -> int | None:
        """Go to event k (-1: before the first), as far as the log goes."""
        return self._go(k)

    def home(self) -> int | None:
        return self._go(-1)

    def end(self) -> int | None:
        return self._go(self.last)

    def next_dispatch(self) -> int | None:
        return self._go(self.table.next_dispatch(self.k))

    def previous_dispatch(self) -> int | None:
        return self._go(self.table.previous_dispatch(self.k))

    def next_dispatch_of(self, user: str) -> int | None:
        code = self.table.user_code.get(user)
        return None if code is None else self._go(self.table.next_dispatch(self.k, code))

    def next_idle_reset(self) -> int | None:
        return self._go(self.table.next_idle_reset(self.k))

    def not_found(self, text: str) -> str:
        """Why ``goto(text)`` found nothing, in one line."""
        text = text.strip()
        first = self.table.first_seq
        if text.isdigit() and int(text) < first:
            return f"seq {count(int(text))} is no longer held: the window starts at seq {count(first)}"
        return f"nothing matches {text!r}"

    def at_time(self, t: float) -> int | None:
        """Go to the last event at or before time t (before the first event if t is earlier)."""
        return self._go(self.table.at_time(t))

    def at_dispatch(self, n: int) -> int | None:
        """Go to dispatch number n (from 0; -1: before the first event); None if it is not loaded."""
        return self.home() if n < 0 else self._go(self.table.nth_dispatch(n))

    @property
    def time(self) -> float | None:
        """The time of the current event (None before the first)."""
        return self.table.t[self.k] if self.k >= 0 else None

    @property
    def dispatch_number(self) -> int:
        """The number of the last dispatch at or before the cursor (-1: none yet)."""
        return self.table.dispatch_number(self.k + 1) - 1

    def next_violation(self) -> int | None:
        pos = bisect_right(self.violations, self.k)
        return self._go(self.violations[pos]) if pos < len(self.violations) else None

    def goto(self, text: str) -> int | None:
        """Go to an event number (``1234``: its seq, also in a live window that starts later),
        a time (``12.5s`` or ``t=12.5``) or a request id."""
        text = text.strip()
        if not text:
            return None
        if text.isdigit():
            k = int(text) - self.table.first_seq
            return self._go(k) if 0 <= k <= self.last else None
        match = _TIME.match(text)
        if match:
            return self.at_time(float(match.group(1) or match.group(2)))
        life = self.table.request_life(text)
        if not life:
            return None
        return self._go(life.get("dispatch", life.get("cancel", life.get("arrive"))))
