"""Pausing Python's cyclic garbage collector around allocation-heavy work without cycles.

Replaying allocates millions of short-lived tuples while millions of long-lived objects
(the trace) are alive; each automatic collection then walks all of them. Nothing in a
replay forms a reference cycle, so reference counting frees everything anyway.

The collector is one switch for the whole process, and such work runs on several threads
at once (the dashboard replays each pane on a worker of its own), so this module owns the
switch and nothing else in sfqtui touches it. Each piece of work holds a pause of its own;
the collector is off while any is held and back as it was once the last is let go,
whatever order they end in. (Switching it from each thread, the second to start would
find it off, and the collector could stay off for good.)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from threading import Lock

_lock = Lock()
_held = 0  # pauses held now
_was_enabled = False  # the collector's state before the first of them


class CollectorPause:
    """One holder's pause. ``hold`` and ``release`` may be repeated: a generator lets go
    while its caller runs and holds it again when it resumes."""

    def __init__(self) -> None:
        self.held = False

    def hold(self) -> None:
        global _held, _was_enabled
        if self.held:
            return
        self.held = True
        with _lock:
            if not _held:
                _was_enabled = gc.isenabled()
                gc.disable()
            _held += 1

    def release(self) -> None:
        global _held
        if not self.held:
            return
        self.held = False
        with _lock:
            _held -= 1
            if not _held and _was_enabled:
                gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    pause = CollectorPause()
    pause.hold()
    try:
        yield
    finally:
        pause.release()


def keep_out_of_collections() -> None:
    """Put every object alive now out of the collector's walks for good (``gc.freeze``): for
    the dashboard's tables, whose long-lived objects every full collection would walk again.
    Reference counting still frees them."""
    gc.freeze()
