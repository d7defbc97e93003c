"""Every scheduler behind one interface, built by name."""

from __future__ import annotations

from sfqtui.core.schedulers.base import Scheduler, SchedulerView, UserView
from sfqtui.core.schedulers.baselines import FIFO, RoundRobin
from sfqtui.core.schedulers.drr import DRR
from sfqtui.core.schedulers.sfq import SFQ, SFQReset

SCHEDULERS: tuple[str, ...] = ("sfq", "sfq-reset", "drr", "fifo", "rr")


def make_scheduler(name: str, weights: dict[str, float] | None = None, quantum: float | None = None) -> Scheduler:
    """Build a scheduler by its semantics name. DRR needs ``quantum``."""
    if name == "sfq":
        return SFQ(weights)
    if name == "sfq-reset":
        return SFQReset(weights)
    if name == "drr":
        if quantum is None:
            raise ValueError("drr needs a quantum")
        return DRR(quantum, weights)
    if name == "fifo":
        return FIFO(weights)
    if name == "rr":
        return RoundRobin(weights)
    raise ValueError(f"unknown scheduler {name!r}; choose one of {', '.join(SCHEDULERS)}")


__all__ = ["SCHEDULERS", "Scheduler", "SchedulerView", "UserView", "make_scheduler", "DRR", "FIFO", "RoundRobin", "SFQ", "SFQReset"]
