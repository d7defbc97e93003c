"""What a replay is asked to do (``ReplayConfig``): the scheduler, slots, pricing, service model,
replicas and engines, checked as far as they can be without the trace."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sfqtui.core.engines.settings import EngineSettings, slots_named
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.pricing.service import TokenServiceModel
from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.replicas.settings import ONE_REPLICA, ReplicaSettings
from sfqtui.core.schedulers import traits
from sfqtui.core.schedulers.policy import PolicyOptions
from sfqtui.errors import InputError

REPRICED = "repriced by the estimator"  # how a run of ReplayConfig.reprice over a trace's cost column is named on screen
# How a replay of a recording under --slots auto on other slots (or the engine model) is named on screen: a what-if.
NOT_RECORDED_CAPACITY = "not the recorded capacity"


@dataclass(frozen=True)
class ReplayConfig:
    scheduler: str = "sfq"
    slots: int = 1
    quantum: float | None = None
    estimator: EstimatorParams = field(default_factory=EstimatorParams)
    service: TokenServiceModel = field(default_factory=TokenServiceModel)
    renormalise_every: int | None = None
    replicas: ReplicaSettings = ONE_REPLICA
    reprice: bool = False  # price with the estimator even when the trace has a cost column (a what-if)
    engine: EngineSettings | None = None  # run the engine model behind the slots instead of fixed service times
    capacity: RecordedLimits | None = None  # the slots follow a recording's limits (docs/semantics.md §13) instead of ``slots``
    policy: PolicyOptions = field(default_factory=PolicyOptions)  # the options of the policies of semantics §15
    # The replay is of a recording as it ran (its own slots or capacity, its costs, one scheduler, no engine model): the
    # engine starts it recorded become start rows (recorded_starts.py). False for a what-if: how an engine would have
    # started requests dispatched otherwise is unknown.
    as_recorded: bool = False

    def __post_init__(self) -> None:
        found = traits(self.scheduler)
        if self.slots < 1:
            raise InputError("slots must be >= 1")
        self.replicas.check(self.slots, self.scheduler, found.virtual_time)
        if self.replicas.replicated and self.renormalise_every is not None:
            raise InputError("--renormalise-every renormalises one scheduler; it is not available with --replicas > 1")
        if self.quantum is not None and not self.quantum > 0:
            raise InputError("quantum must be > 0")
        if self.renormalise_every is not None and self.renormalise_every < 1:
            raise InputError("renormalise_every must be >= 1 dispatch")
        if self.engine is not None and self.engine.auto is not None and self.replicas.replicated and self.replicas.share.splits_slots:
            raise InputError("--slots auto makes one pool of the engines' limits: with --replicas it needs --share global")
        if self.capacity is not None and self.engine is not None:
            raise InputError("a recorded capacity is replayed on the recorded service times, not on the engine model")
        if self.capacity is not None and self.replicas.replicated and self.replicas.share.splits_slots:
            raise InputError("a recorded capacity is one pool of the recorded limits: with --replicas it needs --share global")


def one_scheduler(config: ReplayConfig) -> ReplayConfig:
    """The same replay with one scheduler over all the slots: the reference of §11's measures."""
    return replace(config, replicas=ONE_REPLICA)


def slots_said(config: ReplayConfig) -> str:
    """The slots as a header says them: '6 slots', 'auto slots', or a recording's ('slots as recorded (auto: 2 to 17, ...)')."""
    return config.capacity.describe() if config.capacity is not None else slots_named(config.slots, config.engine)
