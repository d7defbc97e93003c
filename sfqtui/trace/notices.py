"""What a source says besides its events: one small frozen dataclass per kind of word,
which its reader matches on by type.

A source that ends (a replay, a saved log) says at most ``WindowStarts``; a live
stream's words (its connection, its proxy runs, its audit, ...) are in sfqtui.attach.
"""

from __future__ import annotations

from dataclasses import dataclass

from sfqtui.protocol import ProxyState, StateSnapshot


class Notice:
    """A source's word besides its events (not an event)."""

    __slots__ = ()


@dataclass(frozen=True)
class WindowStarts(Notice):
    """The events that follow go in a new window whose first seq is ``first_seq``: after a
    stream's window filled, after a gap, or at the start of a log recorded from a proxy's
    state (semantics §7). ``state``: the proxy's state to seed it with (None: the state the
    last window ended in); ``new_users``: the users that no batch will introduce; ``users``:
    every user by code, at the window's start."""

    first_seq: int
    state: ProxyState | StateSnapshot | None = None
    new_users: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
