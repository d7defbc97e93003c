"""The runs of a sweep: every combination of traces x schedulers x slots x ratio scopes x
updates x replicas x routers x shares (semantics §11; one replica is one run whatever the
router and share)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product

from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.pricing.estimator import SCOPES, UPDATES, EstimatorParams
from sfqtui.core.pricing.service import TokenServiceModel
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replicas.settings import ONE_REPLICA, ReplicaSettings, Share
from sfqtui.core.schedulers.registry import check_schedulers
from sfqtui.errors import InputError


@dataclass(frozen=True)
class RunSettings:
    """One replay of a sweep; ``trace`` names the trace (its path as given)."""

    trace: str
    scheduler: str
    slots: int
    estimator: EstimatorParams = field(default_factory=EstimatorParams)
    service: TokenServiceModel = field(default_factory=TokenServiceModel)
    replicas: ReplicaSettings = ONE_REPLICA
    engine: EngineSettings | None = None  # the engine model behind the slots (None: fixed service times)

    def config(self) -> ReplayConfig:
        return ReplayConfig(scheduler=self.scheduler, slots=self.slots, estimator=self.estimator, service=self.service,
                            replicas=self.replicas, engine=self.engine)

    def as_row(self) -> dict[str, object]:
        replicated = self.replicas.replicated
        return {
            "trace": self.trace,
            "scheduler": self.scheduler,
            "slots": self.slots,
            "estimator": "oracle" if self.estimator.oracle else "ratio",
            "ratio_scope": self.estimator.scope,
            "ratio_update": self.estimator.update,
            "replicas": self.replicas.count,
            "router": self.replicas.router if replicated else None,
            "share": str(self.replicas.share) if replicated else None,
            "seed": self.replicas.seed if replicated and self.replicas.router == "random" else None,
            "engines": None if self.engine is None else self.engine.engines,
            "placement": None if self.engine is None else self.engine.placement,
        }


@dataclass(frozen=True)
class ReplicaGrid:
    """The replica settings a sweep crosses: counts x routers x shares, one seed."""

    counts: Sequence[int] = (1,)
    routers: Sequence[str] = (ONE_REPLICA.router,)
    shares: Sequence[str] = ("none",)
    seed: int = 0

    def settings(self) -> list[ReplicaSettings]:
        """Every combination (InputError naming the first bad one); one replica once, whatever its router and share."""
        if not self.counts or not self.routers or not self.shares:
            raise InputError("--replicas, --router and --share each need at least one value")
        shares = [Share.parse(text) for text in self.shares]
        found: list[ReplicaSettings] = []
        for count, router, share in product(self.counts, self.routers, shares):
            settings = ReplicaSettings(count, router, share, self.seed) if count != 1 else ONE_REPLICA
            if settings not in found:
                found.append(settings)
        return found


def check_settings(schedulers: Sequence[str], slots: Sequence[int] | None, scopes: Sequence[str], updates: Sequence[str],
                   replicas: ReplicaGrid = ReplicaGrid()) -> None:
    """InputError naming the first bad setting, so a sweep is refused before any run starts.
    Settings that only clash in some runs (sync with a scheduler that has no meters, fewer
    slots than replicas) fail those runs, each with its error in its row."""
    check_schedulers(schedulers)
    for name, given, allowed in (("ratio scope", scopes, SCOPES), ("ratio update", updates, UPDATES)):
        wrong = [x for x in given if x not in allowed]
        if wrong or not given:
            raise InputError(f"unknown {name}(s) {', '.join(wrong) or '(none given)'}; choose from {', '.join(allowed)}")
    if slots is not None and (not slots or min(slots) < 1):
        raise InputError("slots must be >= 1")
    replicas.settings()


def plan_runs(
    suggested_slots: Mapping[str, int | None],
    schedulers: Sequence[str],
    slots: Sequence[int] | None = None,
    scopes: Sequence[str] = ("global",),
    updates: Sequence[str] = ("window",),
    replicas: ReplicaGrid = ReplicaGrid(),
    engine: EngineSettings | None = None,
    placements: Sequence[str] = ("room",),
) -> list[RunSettings]:
    """Every combination, in the order of the arguments, each trace's runs together.

    ``suggested_slots`` maps each trace to the slot count it was made for, used when
    ``slots`` is None (as `compare` does). Every other setting is its default, as in
    `compare` without options (docs/estimator.md). ``engine``: the engine model behind every
    run, each of ``placements`` in turn (docs/semantics.md §14); None: fixed service times.
    """
    check_settings(schedulers, slots, scopes, updates, replicas)
    if not suggested_slots:
        raise InputError("a sweep needs at least one trace")
    if engine is None and list(placements) != ["room"]:
        raise InputError("--placement places requests among engines: give --engines N")
    engines = [None] if engine is None else [replace(engine, placement=p) for p in placements]
    return [
        RunSettings(trace, scheduler, n if slots or engine is None else engine.places, EstimatorParams(scope=scope, update=update),  # type: ignore[arg-type]  # check_settings refused other names
                    replicas=settings, engine=on)
        for trace, suggested in suggested_slots.items()
        for scheduler, n, scope, update, settings, on in product(schedulers, slots or [suggested or 1], scopes, updates, replicas.settings(),
                                                                 engines)
    ]
