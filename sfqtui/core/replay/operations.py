"""What a loop calls on each pool's scheduler, bound once per run: a list per operation, by pool."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sfqtui.core.pricing.estimator import CostEstimator
from sfqtui.core.schedulers.base import CostOf, Dispatch, Scheduler, User, UserReading


@dataclass(frozen=True)
class PoolOperations:
    """Each pool's scheduler's arrive, reading, dispatch and idle reset; what a completion calls
    besides the log: the scheduler's complete with ``complete_charge`` when it charges actual usage
    (None: it does not), each estimator's observe when costs are estimated (None: given)."""

    arrive: list[Callable[[int, User], UserReading]]
    reading: list[Callable[[User], UserReading]]
    dispatch: list[Callable[[CostOf], Dispatch]]
    idle_reset: list[Callable[[], float | None]]
    complete: list[Callable[[int, User, float], UserReading]] | None
    complete_charge: CostOf | None
    observe: list[Callable[[int], None]] | None

    @classmethod
    def of(cls, schedulers: list[Scheduler], estimators: list[CostEstimator | None], complete_charge: CostOf | None,
           renormalise_every: int | None) -> PoolOperations:
        """The operations of ``schedulers``; with ``renormalise_every`` (one scheduler only) they report
        v and meters in the absolute frame and renormalise every N picks (``renormalising``)."""
        if renormalise_every:
            arrive, reading, dispatch, idle_reset = renormalising(schedulers[0], renormalise_every)
        else:
            arrive = [s.arrive for s in schedulers]
            reading = [s.reading for s in schedulers]
            dispatch = [s.dispatch for s in schedulers]
            idle_reset = [s.idle_reset for s in schedulers]
        complete: list[Callable[[int, User, float], UserReading]] | None = None
        if complete_charge is not None:
            complete = [s.complete for s in schedulers]
        observe: list[Callable[[int], None]] | None = None
        if estimators[0] is not None:
            observe = [e.observe for e in estimators if e is not None]
        return cls(arrive, reading, dispatch, idle_reset, complete, complete_charge, observe)


def renormalising(sched: Scheduler, every: int) -> tuple[list[Callable[[int, User], UserReading]], list[Callable[[User], UserReading]],
                                                        list[Callable[[CostOf], Dispatch]], list[Callable[[], float | None]]]:
    """One scheduler's arrive, reading, dispatch and idle reset reporting v and meters in the
    absolute frame (value + the offset renormalisation has taken out), renormalising every
    ``every`` picks."""
    count = 0

    def absolute(reading: UserReading) -> UserReading:
        v, meter, deficit = reading
        off = sched.offset
        return v + off, (None if meter is None else meter + off), deficit  # type: ignore[operator]  # a renormalisable scheduler always has v

    def dispatch(cost_of: CostOf) -> Dispatch:
        nonlocal count
        req, user, cost, v, meter, deficit, credit = sched.dispatch(cost_of)
        off = sched.offset
        count += 1
        if count % every == 0:
            sched.renormalise()
        return req, user, cost, v + off, meter + off, deficit, credit  # type: ignore[operator]  # a renormalisable scheduler reports v and the meter

    return (
        [lambda req, user: absolute(sched.arrive(req, user))],
        [lambda user: absolute(sched.reading(user))],
        [dispatch],
        [lambda: sched.idle_reset() + sched.offset],  # type: ignore[operator]  # a renormalisable scheduler's idle reset returns v
    )
