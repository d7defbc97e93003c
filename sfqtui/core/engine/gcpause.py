"""Pausing Python's cyclic garbage collector around allocation-heavy work without cycles.

Replaying allocates millions of short-lived tuples while millions of long-lived objects
(the trace) are alive; each automatic collection then walks all of them. Nothing in a
replay forms a reference cycle, so reference counting frees everything anyway.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
