"""Every scheduler behind one interface; their traits and constructors in one registry."""

from __future__ import annotations

from sfqtui.core.schedulers.base import Scheduler
from sfqtui.core.schedulers.baselines import FIFO, RoundRobin
from sfqtui.core.schedulers.drr import DRR
from sfqtui.core.schedulers.registry import REGISTRY, SCHEDULERS, SchedulerTraits, make_scheduler, traits
from sfqtui.core.schedulers.sfq import SFQ, SFQReset
from sfqtui.core.schedulers.vtc import VTC

__all__ = ["REGISTRY", "SCHEDULERS", "SchedulerTraits", "Scheduler", "make_scheduler", "traits",
           "DRR", "FIFO", "RoundRobin", "SFQ", "SFQReset", "VTC"]
