"""What both replay loops bind as locals once per run: fixed service times in ``replay``,
the engine model in ``engine_replay``."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading


class LoopParts(NamedTuple):
    """What a loop reads of a replay once per run: each pool's scheduler and its operations, the
    completion hooks (None: not needed), the actual-usage charge, whether the scheduler has a
    virtual time, and whether each replica has a pool of its own."""

    schedulers: list[Scheduler]
    arrive: list[Callable[[int, User], UserReading]]
    reading: list[Callable[[User], UserReading]]
    dispatch: list[Callable[[CostOf], Dispatch]]
    idle_reset: list[Callable[[], float | None]]
    complete: list[Callable[[int, User, float], UserReading]] | None
    observe: list[Callable[[int], None]] | None
    complete_charge: CostOf | None
    virtual: bool
    split: bool
