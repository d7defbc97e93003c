"""Several runs stepped together: by time, or by dispatch number (the k-th dispatch of each).

One cursor leads; after it moves, every follower is put where the same moment is in its
own log. A moment is an anchor and how many events the leader has gone past it:

- by time, the anchor is the last of the leader's dispatches at its current time t (or
  the start of t, before any). The follower goes to its own dispatch with the same count
  at t, then as many events on, staying within t and before its next dispatch. Runs of
  one trace share their arrivals, so at t = 0 of a trace whose requests all arrive at
  once both stand on the same arrival, and on the first dispatch together.
- by dispatch, the anchor is the leader's n-th dispatch (or the start): the follower goes
  to its own n-th, then as many events on, before its next. The n-th decisions of two
  schedulers face each other even when their clocks differ.

Where the follower's log has no such moment (fewer dispatches at t, no n-th dispatch, not
loaded yet), it goes as near as its log has and the pairing says why.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sfqtui.core.log.cursor import Cursor
from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import seconds
from sfqtui.errors import InputError

Mode = Literal["time", "dispatch"]
MODES: tuple[Mode, ...] = ("time", "dispatch")


def mode_of(name: str) -> Mode:
    """The lockstep mode by name; InputError naming the choices otherwise."""
    for mode in MODES:
        if mode == name:
            return mode
    raise InputError(f"--lockstep must be one of {', '.join(MODES)}")


HOW = {"time": "same t, as many dispatches at it", "dispatch": "the n-th dispatch of each"}  # how runs are paired, said above the panes


@dataclass(frozen=True)
class Pairing:
    k: int  # the follower's event (-1: before its first)
    missing: str = ""  # what the follower's log lacks to stand at the leader's very moment


def pair(leader: EventTable, k: int, follower: EventTable, mode: Mode) -> Pairing:
    """Where in ``follower`` the moment of the leader's event k is."""
    if k < 0 or not len(follower):
        return Pairing(-1, "" if k < 0 else "no events yet")
    if mode == "time":
        return _by_time(leader, k, follower)
    return _by_dispatch(leader, k, follower)


def _by_time(leader: EventTable, k: int, follower: EventTable) -> Pairing:
    t = leader.t[k]
    start = bisect_left(leader.t, t, 0, len(leader))
    before = leader.dispatch_number(start)
    n = leader.dispatch_number(k + 1) - before  # the leader's dispatches at t so far
    past = k - (leader.dispatches[before + n - 1] if n else start - 1)  # events since the anchor
    first, end = bisect_left(follower.t, t, 0, len(follower)), bisect_right(follower.t, t, 0, len(follower))
    if first == end:
        return Pairing(end - 1)  # nothing happens at t in the follower's log: its last event before
    own = follower.dispatch_number(first)
    at_t = follower.dispatch_number(end) - own
    if n > at_t:
        return Pairing(end - 1, f"{at_t:,} dispatch{'es' if at_t != 1 else ''} at t={seconds(t)}s, not {n:,}")
    anchor = follower.dispatches[own + n - 1] if n else first - 1
    limit = follower.dispatches[own + n] if n < at_t else end
    return Pairing(min(anchor + past, limit - 1))


def _by_dispatch(leader: EventTable, k: int, follower: EventTable) -> Pairing:
    n = leader.dispatch_number(k + 1) - 1  # the leader's last dispatch so far (-1: none yet)
    past = k - (leader.dispatches[n] if n >= 0 else -1)
    anchor = follower.nth_dispatch(n) if n >= 0 else -1
    if anchor is None:
        return Pairing(len(follower) - 1, f"no dispatch #{n + 1:,} (yet)")
    after = follower.nth_dispatch(n + 1)
    limit = after if after is not None else len(follower)
    return Pairing(min(anchor + past, limit - 1))


def follow(leader: Cursor, followers: Sequence[Cursor], mode: Mode) -> None:
    """Put every follower at the leader's moment."""
    for cursor in followers:
        cursor.at_event(pair(leader.table, leader.k, cursor.table, mode).k)
