"""The replay's loop over its servers seam (sfqtui.core.replay.servers): the loop for any
servers runs fixed service times as the fixed-service loop does, a capacity that changes over
time only holds dispatches back (a lower one never preempts), and the replica layer's sync rows
fit the engine model's rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import COMPLETE, DISPATCH, FIELDS, LIMIT, SYNC, EventColumns, EventLayout, EventLog
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.loop import run_fixed, run_served
from sfqtui.core.replay.plan import ReplayPlan
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replay.servers import Change, FixedService
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.core.requests.trace import Trace

SCHEDULERS = ("sfq", "drr", "vtc", "fifo", "rr")


def busy_trace(n: int = 600) -> Trace:
    """Three users, the first sending in bursts, each request with tokens, a cost and a service time."""
    users = [("heavy" if k % 3 else "light") if k % 7 else "third" for k in range(n)]
    arrivals = [round((k // 4) * 0.25, 3) for k in range(n)]
    inputs = [100 + (k * 37) % 900 for k in range(n)]
    outputs = [20 + (k * 11) % 200 for k in range(n)]
    return Trace([f"r{k}" for k in range(n)], users, arrivals, input_tokens=inputs, max_tokens=[o + 50 for o in outputs],
                 output_tokens=outputs, cost=[float(i + 2 * o) for i, o in zip(inputs, outputs)],
                 service_s=[0.05 + o / 40 for o in outputs])


def served_plan(trace: Trace, config: ReplayConfig) -> ReplayPlan:
    """The plan of ``config`` (fixed service), its log laid out for the loop of any servers."""
    plan = ReplayPlan(trace, config)
    found = plan.traits
    plan.layout = EventLayout.of(found.virtual_time, found.reading, "credit" in found.extra_columns, config.replicas.replicated, engines=True)
    plan.log = EventLog(plan.layout)
    if plan.group is not None:
        plan.group._log = plan.log  # the group writes its sync rows to the log the loop fills
    return plan


def events(plan: ReplayPlan, fixed: bool) -> EventColumns:
    assert isinstance(plan.servers, FixedService)
    for _ in run_fixed(plan, plan.servers, 1 << 30) if fixed else run_served(plan, plan.servers, 1 << 30):
        pass
    return plan.log.held().columns()


def without_engines(columns: EventColumns) -> list[tuple[object, ...]]:
    return list(zip(*(getattr(columns, name) for name in FIELDS if name not in ("replica", "user"))))


SHARED = [ReplicaSettings(), ReplicaSettings(2), ReplicaSettings(3, "random", Share("global"))]
SYNC_SHARED = ReplicaSettings(2, "round-robin", Share.parse("sync:1,0.5"))  # share sync exchanges SFQ's meters: SFQ only


@pytest.mark.parametrize(("scheduler", "replicas"), [*((name, r) for name in SCHEDULERS for r in SHARED), ("sfq", SYNC_SHARED)], ids=str)
def test_the_loop_of_any_servers_runs_fixed_service_as_the_fixed_loop_does(scheduler: str, replicas: ReplicaSettings) -> None:
    config = ReplayConfig(scheduler, 6, replicas=replicas)
    fixed, served = events(ReplayPlan(busy_trace(), config), True), events(served_plan(busy_trace(), config), False)
    assert len(fixed) >= 1800  # an arrival, a dispatch and a completion of each request
    assert without_engines(served) == without_engines(fixed)
    assert (served.replica, served.user) == (fixed.replica, fixed.user)


@dataclass
class Steps:
    """A capacity that follows a schedule of (time, total): a recorded capacity's shape."""

    schedule: list[tuple[float, int]]
    total: int = 0
    next_t: float = 0.0
    seen: list[tuple[float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.total = self.schedule[0][1]
        self.next_t = self.schedule[1][0]
        self._k = 1

    def first(self) -> list[Change]:
        return [(0, self.total, "start")]

    def wake(self, now: float) -> None:
        pass  # the changes are due at their times whatever arrives

    def stir(self, now: float) -> None:
        pass

    def change(self, now: float, busy: bool) -> list[Change]:
        _, self.total = self.schedule[self._k]
        self._k += 1
        self.next_t = self.schedule[self._k][0] if self._k < len(self.schedule) else float("inf")
        return [(0, self.total, "room")]


def test_a_capacity_over_time_holds_dispatches_back_and_never_preempts() -> None:
    trace = busy_trace(300)
    plan = served_plan(trace, ReplayConfig("sfq", 8))
    servers = plan.servers
    assert isinstance(servers, FixedService)
    servers.capacity = Steps([(0.0, 8), (5.0, 2), (30.0, 5)])
    columns = events(plan, fixed=False)
    assert columns.limit is not None
    in_flight, most_after_drop, limit = 0, 0, None
    for t, kind, value in zip(columns.t, columns.kind, columns.limit, strict=True):
        if kind == LIMIT:
            limit = value
        elif kind == DISPATCH:
            in_flight += 1
            assert (limit is not None and in_flight <= limit) or t < 5.0, f"a dispatch at {t} over the limit {limit}"
            if 5.0 <= t < 30.0:
                most_after_drop = max(most_after_drop, in_flight)
        elif kind == COMPLETE:
            in_flight -= 1
    assert [(t, v) for t, k, v in zip(columns.t, columns.kind, columns.limit) if k == LIMIT] == [(0.0, 8), (5.0, 2), (30.0, 5)]
    assert most_after_drop == 2  # the requests running at the drop finished; none was preempted, later ones waited
    assert columns.kind.count(COMPLETE) == len(trace)


def test_share_sync_writes_its_rows_on_the_engine_model() -> None:
    config = ReplayConfig("sfq", 4, replicas=ReplicaSettings(2, "round-robin", Share.parse("sync:1,0.5")),
                          engine=EngineSettings(EngineModel(max_num_seqs=2), 2))
    columns = Replay(busy_trace(), config).run_all()
    assert SYNC in columns.kind and columns.upstream is not None
