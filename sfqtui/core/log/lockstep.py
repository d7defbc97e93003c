"""Several runs stepped together: by time, or by dispatch number (the k-th dispatch of each).

One cursor leads; after it moves, every follower is put where the same moment is in its
own log. By time, that is its last event at or before the leader's time. By dispatch,
it is its own n-th dispatch, n being the number of the leader's last dispatch so far,
so the k-th decisions of two schedulers face each other even when their clocks differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sfqtui.core.log.cursor import Cursor
from sfqtui.errors import InputError

Mode = Literal["time", "dispatch"]
MODES: tuple[Mode, ...] = ("time", "dispatch")


def mode_of(name: str) -> Mode:
    """The lockstep mode by name; InputError naming the choices otherwise."""
    for mode in MODES:
        if mode == name:
            return mode
    raise InputError(f"--lockstep must be one of {', '.join(MODES)}")


def follow(leader: Cursor, followers: Sequence[Cursor], mode: Mode) -> None:
    """Put every follower at the leader's moment."""
    for cursor in followers:
        if mode == "time":
            t = leader.time
            if t is None:
                cursor.home()
            else:
                cursor.at_time(t)
        else:
            n = leader.dispatch_number
            if cursor.at_dispatch(n) is None:
                cursor.end()  # its n-th dispatch is not loaded (yet): as far as it goes
