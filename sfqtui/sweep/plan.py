"""The runs of a sweep: every combination of traces x schedulers x slots x ratio scopes x updates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

from sfqtui.core.engine.estimator import SCOPES, UPDATES, EstimatorParams
from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.core.engine.service import TokenServiceModel
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

    def config(self) -> ReplayConfig:
        return ReplayConfig(scheduler=self.scheduler, slots=self.slots, estimator=self.estimator, service=self.service)

    def as_row(self) -> dict[str, object]:
        return {
            "trace": self.trace,
            "scheduler": self.scheduler,
            "slots": self.slots,
            "estimator": "oracle" if self.estimator.oracle else "ratio",
            "ratio_scope": self.estimator.scope,
            "ratio_update": self.estimator.update,
        }


def check_settings(schedulers: Sequence[str], slots: Sequence[int] | None, scopes: Sequence[str], updates: Sequence[str]) -> None:
    """InputError naming the first bad setting, so a sweep is refused before any run starts."""
    check_schedulers(schedulers)
    for name, given, allowed in (("ratio scope", scopes, SCOPES), ("ratio update", updates, UPDATES)):
        wrong = [x for x in given if x not in allowed]
        if wrong or not given:
            raise InputError(f"unknown {name}(s) {', '.join(wrong) or '(none given)'}; choose from {', '.join(allowed)}")
    if slots is not None and (not slots or min(slots) < 1):
        raise InputError("slots must be >= 1")


def plan_runs(
    suggested_slots: Mapping[str, int | None],
    schedulers: Sequence[str],
    slots: Sequence[int] | None = None,
    scopes: Sequence[str] = ("global",),
    updates: Sequence[str] = ("window",),
) -> list[RunSettings]:
    """Every combination, in the order of the arguments, each trace's runs together.

    ``suggested_slots`` maps each trace to the slot count it was made for, used when
    ``slots`` is None (as `compare` does). Every other setting is its default, as in
    `compare` without options (docs/estimator.md).
    """
    check_settings(schedulers, slots, scopes, updates)
    if not suggested_slots:
        raise InputError("a sweep needs at least one trace")
    return [
        RunSettings(trace, scheduler, n, EstimatorParams(scope=scope, update=update))  # type: ignore[arg-type]  # check_settings refused other names
        for trace, suggested in suggested_slots.items()
        for scheduler, n, scope, update in product(schedulers, slots or [suggested or 1], scopes, updates)
    ]
