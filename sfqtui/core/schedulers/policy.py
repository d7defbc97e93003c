"""What the policies operators run today (semantics §15) read besides a request's user.

A Scheduler's ``arrive(req, user)`` stays the same for every scheduler, so the replay's loop
pays nothing for them: a policy scheduler is built with a ``RequestAttributes``, a read-only
table of each request's priority, flow, class, deadline and uncached input tokens by request
number (a replay reads them from the trace's columns through its window; the proxy fills a
table of its own), and its ``PolicyOptions``. This base class is a table with none of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from sfqtui.core.numbers import amount
from sfqtui.core.schedulers.base import Scheduler, User
from sfqtui.errors import InputError

DEFAULT_CLASS = "default"  # Dynamo's class when no policy class is given
NOTHING_QUEUED = math.nan  # a reading's band or tier when the user has nothing queued
HALF_LIFE_S = 60.0
# A flow id: its user (a code or a name), or a flow's name. A run's flows are all of one kind
# and are ordered as their ids are (llm-d sorts them); Any, since Hashable does not say "ordered".
Flow = Any


class RequestAttributes:
    """Each request's policy attributes by request number; this base gives none: priority 0,
    its user's flow, the default class, no deadline and no token count."""

    def priority(self, req: int) -> int:
        return 0

    def flow(self, req: int, user: User) -> Flow:
        """The fairness id (llm-d's flow); the user when the request names none."""
        return user

    def policy_class(self, req: int) -> str:
        return DEFAULT_CLASS

    def deadline(self, req: int) -> float:
        """The absolute time by which it should be served (arrival + deadline_s); inf: none."""
        return math.inf

    def tokens(self, req: int) -> float | None:
        """Its uncached input tokens (None: not known, and a policy that prices by them uses the dispatch's cost)."""
        return None

    def arrival(self, req: int) -> float | None:
        """When it arrived (None: not known)."""
        return None


NO_ATTRIBUTES = RequestAttributes()


@dataclass(frozen=True)
class PolicyOptions:
    """The options of the policy schedulers: llm-d's ordering within a flow, Dynamo's class
    weights (each class's quantum is ``class_quantum`` times its weight) and LAS's half-life."""

    ordering: Literal["fcfs", "edf"] = "fcfs"
    class_weights: tuple[tuple[str, float], ...] = ()
    half_life_s: float = HALF_LIFE_S
    class_quantum: float = 1024.0  # uncached tokens a class of weight 1 earns per DRR round

    def __post_init__(self) -> None:
        if self.ordering not in ("fcfs", "edf"):
            raise InputError(f"--ordering {self.ordering}: choose fcfs or edf")
        if not (self.half_life_s > 0 and math.isfinite(self.half_life_s)):
            raise InputError(f"--half-life {self.half_life_s}: the half-life must be a finite number of seconds > 0")
        for name, weight in self.class_weights:
            if not (weight > 0 and math.isfinite(weight)):
                raise InputError(f"--class-weights: class {name!r} has weight {weight}; a weight must be a finite number > 0")

    @classmethod
    def parse_weights(cls, text: str) -> tuple[tuple[str, float], ...]:
        """``gold=3,free=1`` as (class, weight) pairs; InputError saying what is wrong otherwise."""
        pairs: list[tuple[str, float]] = []
        for part in (p.strip() for p in text.split(",") if p.strip()):
            name, equals, value = part.partition("=")
            try:
                weight = float(value)
            except ValueError:
                weight = math.nan
            if not equals or not name.strip() or math.isnan(weight):
                raise InputError(f"--class-weights: {part!r} is not CLASS=WEIGHT (such as gold=3,free=1)")
            pairs.append((name.strip(), weight))
        return tuple(pairs)

    def check_used_by(self, schedulers: Iterable[str]) -> None:
        """InputError for an option given for none of ``schedulers`` (--ordering edf without llm-d, ...)."""
        names = set(schedulers)
        for option, given, users in (("--ordering edf", self.ordering == "edf", "llm-d"), ("--class-weights", bool(self.class_weights), "dynamo"),
                                     (f"--half-life {amount(self.half_life_s)}", self.half_life_s != HALF_LIFE_S, "las")):
            if given and users not in names:
                raise InputError(f"{option} is {users}'s option, and {users} is not among the schedulers run ({', '.join(sorted(names))})")

    def check_classes(self, classes: Iterable[str]) -> None:
        """InputError when a weight names a class the trace does not have."""
        present = set(classes)
        missing = [name for name, _ in self.class_weights if name not in present]
        if missing:
            have = ", ".join(sorted(present)) or "none"
            raise InputError(f"--class-weights names class(es) {', '.join(missing)} that the trace does not have (its classes: {have})")


S = TypeVar("S", bound=Scheduler)


def clone_keeping(sched: S, *shared: object) -> S:
    """A deep copy of a scheduler whose state nests (dicts of heaps), sharing ``shared`` (the
    read-only attribute table, which may hold the trace's window)."""
    return deepcopy(sched, {id(item): item for item in shared})
