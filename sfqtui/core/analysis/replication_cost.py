"""What running several replicas costs (semantics §11), measured against one scheduler
with the same total slots on the same trace (the reference).

- worst gap: §3.2's worst |W_i - W_j| between users backlogged throughout (on any
  replica), over the whole log, by fairness.py's exact search; in units of c_max;
- drift: per user, the largest |W_i(t) - W_i^ref(t)| over time, W being the charge c / w
  dispatched by t (after every event at t); the largest over users, in c_max;
- stranded: slot-seconds in which a slot is free while a request waits, counting at most
  one free slot per waiting request (the slots one pool would have filled), as a share of
  the run's slot-seconds (all slots, first arrival to last completion). A replica with a
  waiting request has no free slot, so a free slot and a waiting request are always on
  different replicas; under one scheduler (the reference, or share global) it is 0;
- makespan ratio: last completion against the reference's; p99 wait per user, both.

c_max is the largest charge c / w in either run. Per replica the log also gives what each
one did: requests, dispatches, cost, how busy its slots were and how long they stood free
while another replica had requests waiting.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from sfqtui.core.analysis.fairness import FairnessReport, FairnessTally
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig, one_scheduler
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace


@dataclass
class ReplicaReading:
    """What one replica did: requests routed to it, dispatches, cost, and its slots'
    busy and stranded slot-seconds (free while another replica had requests waiting)."""

    slots: int | None
    requests: int = 0
    dispatched: int = 0
    cost: float = 0.0
    busy_slot_s: float = 0.0
    stranded_slot_s: float = 0.0

    def as_dict(self, span: float) -> dict[str, object]:
        capacity = (self.slots or 0) * span
        return {
            "slots": self.slots, "requests": self.requests, "dispatched": self.dispatched, "cost": self.cost,
            "busy": self.busy_slot_s / capacity if capacity else None,
            "stranded": self.stranded_slot_s / capacity if capacity else None,
        }


class RunTally:
    """One run's log, fed chunk by chunk: the fairness figures, each user's charge over
    time, the stranded slot-seconds, the span and, per replica, its readings."""

    def __init__(self, slots: int, weights: dict[str, float], replica_slots: list[int] | None = None) -> None:
        self.slots = slots
        self.weights = weights
        self.fairness = FairnessTally(weights)
        self.times: dict[str, array] = {}  # per user: the time of each dispatch
        self.totals: dict[str, array] = {}  # per user: its charge c / w dispatched so far, after each
        self.c_max = 0.0
        self.first_t: float | None = None
        self.last_t = 0.0
        self.inflight = self.queued = 0
        self.stranded_slot_s = 0.0
        self.split = replica_slots is not None
        self.replicas = [ReplicaReading(n) for n in replica_slots] if replica_slots is not None else []
        self._queued_on = [0] * len(self.replicas)
        self._inflight_on = [0] * len(self.replicas)

    def feed(self, rows: LogRows) -> None:
        self.fairness.feed(rows)
        replicas = rows.replica
        for k, (t, kind, user) in enumerate(zip(rows.t, rows.kind, rows.user)):
            if self.first_t is None:
                self.first_t = self.last_t = t
            if t > self.last_t:
                self._advance(t)
            rep = replicas[k] if replicas is not None else None
            if kind == "arrive":
                self.queued += 1
                if rep is not None and self.replicas:
                    self.replicas[rep].requests += 1
                    self._queued_on[rep] += 1
            elif kind == "dispatch":
                self.queued -= 1
                self.inflight += 1
                cost = rows.cost[k] or 0.0
                self._charge(t, user, cost)  # type: ignore[arg-type]  # a dispatch row names its user
                if rep is not None and self.replicas:
                    reading = self.replicas[rep]
                    reading.dispatched += 1
                    reading.cost += cost
                    self._queued_on[rep] -= 1
                    self._inflight_on[rep] += 1
            elif kind == "complete":
                self.inflight -= 1
                if rep is not None and self.replicas:
                    self._inflight_on[rep] -= 1
            elif kind == "cancel":
                self.queued -= 1
                if rep is not None and self.replicas:
                    self._queued_on[rep] -= 1

    def _charge(self, t: float, user: str, cost: float) -> None:
        charge = cost / self.weights.get(user, 1.0)
        self.c_max = max(self.c_max, charge)
        times = self.times.get(user)
        if times is None:
            times = self.times[user] = array("d")
            self.totals[user] = array("d")
        totals = self.totals[user]
        times.append(t)
        totals.append((totals[-1] if totals else 0.0) + charge)

    def _advance(self, t: float) -> None:
        """Time moves from last_t to t with the state after every event at last_t."""
        span = t - self.last_t
        self.stranded_slot_s += min(self.slots - self.inflight, self.queued) * span
        if self.split:
            for k, reading in enumerate(self.replicas):
                reading.busy_slot_s += self._inflight_on[k] * span
                if self.queued - self._queued_on[k] > 0:
                    reading.stranded_slot_s += (reading.slots - self._inflight_on[k]) * span  # type: ignore[operator]  # split: slots known
        self.last_t = t

    @property
    def span(self) -> float:
        return self.last_t - (self.first_t or 0.0)


def largest_drift(times: array, totals: array, ref_times: array, ref_totals: array) -> tuple[float, float]:
    """max over t of |W(t) - W_ref(t)| for two step functions given by their steps (time,
    total after it), each evaluated after all its steps at t; with the first t reaching it."""
    a = b = 0
    w = w_ref = 0.0
    worst, worst_t = 0.0, 0.0
    while a < len(times) or b < len(ref_times):
        t = min(times[a] if a < len(times) else float("inf"), ref_times[b] if b < len(ref_times) else float("inf"))
        while a < len(times) and times[a] == t:
            w = totals[a]
            a += 1
        while b < len(ref_times) and ref_times[b] == t:
            w_ref = ref_totals[b]
            b += 1
        if abs(w - w_ref) > worst:
            worst, worst_t = abs(w - w_ref), t
    return worst, worst_t


@dataclass
class ReplicaMeasures:
    """§11's measures of one replicated run against its reference."""

    c_max: float
    worst_gap: float | None  # in cost units (c / w)
    reference_worst_gap: float | None
    drift: float
    drift_user: str | None
    drift_t: float | None
    stranded: float
    makespan: float
    reference_makespan: float
    p99_wait: dict[str, tuple[float | None, float | None]]  # per user: (replicated, reference)
    replicas: list[dict[str, object]] = field(default_factory=list)

    def in_c_max(self, x: float | None) -> float | None:
        return None if x is None or not self.c_max else x / self.c_max

    @property
    def makespan_ratio(self) -> float | None:
        return self.makespan / self.reference_makespan if self.reference_makespan else None

    def as_dict(self) -> dict[str, object]:
        return {
            "worst_gap_cmax": self.in_c_max(self.worst_gap),
            "reference_worst_gap_cmax": self.in_c_max(self.reference_worst_gap),
            "drift_cmax": self.in_c_max(self.drift),
            "drift_user": self.drift_user,
            "drift_t": self.drift_t,
            "stranded": self.stranded,
            "makespan_ratio": self.makespan_ratio,
            "makespan_s": self.makespan,
            "reference_makespan_s": self.reference_makespan,
            "c_max": self.c_max,
            "p99_wait": {user: {"replicated": ours, "reference": ref} for user, (ours, ref) in sorted(self.p99_wait.items())},
            "per_replica": self.replicas,
        }


def measure(replicated: RunTally, report: FairnessReport, reference: RunTally, reference_report: FairnessReport) -> ReplicaMeasures:
    """The measures of a replicated run against its reference, from their tallies."""
    drift, drift_user, drift_t = 0.0, None, None
    empty = array("d")
    for user in sorted(set(replicated.times) | set(reference.times)):
        found, at = largest_drift(replicated.times.get(user, empty), replicated.totals.get(user, empty),
                                  reference.times.get(user, empty), reference.totals.get(user, empty))
        if found > drift:
            drift, drift_user, drift_t = found, user, at
    capacity = replicated.slots * replicated.span
    users = set(report.users) | set(reference_report.users)
    p99 = {u: (_p99(report, u), _p99(reference_report, u)) for u in users}
    return ReplicaMeasures(
        c_max=max(replicated.c_max, reference.c_max),
        worst_gap=None if report.worst_gap is None else report.worst_gap.gap,
        reference_worst_gap=None if reference_report.worst_gap is None else reference_report.worst_gap.gap,
        drift=drift, drift_user=drift_user, drift_t=drift_t,
        stranded=replicated.stranded_slot_s / capacity if capacity else 0.0,
        makespan=replicated.last_t, reference_makespan=reference.last_t,
        p99_wait=p99,
        replicas=[reading.as_dict(replicated.span) for reading in replicated.replicas],
    )


def _p99(report: FairnessReport, user: str) -> float | None:
    figures = report.users.get(user)
    return None if figures is None else figures.wait_quantile(0.99)


def tally_replay(trace: Trace, config: ReplayConfig, progress: Callable[[int], None] | None = None) -> tuple[RunTally, FairnessReport]:
    """Replay ``trace`` under ``config`` (one scheduler or several replicas) and tally its log."""
    settings = config.replicas
    own = settings.slots(config.slots) if settings.replicated and settings.share.splits_slots else None
    tally = RunTally(config.slots, trace.weights, own)
    for columns, arrived in Replay(trace, config).chunks():
        tally.feed(rows_from_replay(columns, trace, config.scheduler))
        if progress is not None:
            progress(arrived)
    return tally, tally.fairness.report(config.scheduler)


def replica_measures(trace: Trace, config: ReplayConfig,
                     progress: Callable[[int], None] | None = None) -> tuple[FairnessReport, ReplicaMeasures]:
    """The replicated run's fairness figures and its §11 measures against one scheduler with
    the same slots; ``progress`` gets the requests arrived so far over both replays (2 n in all)."""
    ours, report = tally_replay(trace, config, progress)
    n = len(trace)
    reference, reference_report = tally_replay(trace, one_scheduler(config), None if progress is None else lambda a: progress(n + a))
    return report, measure(ours, report, reference, reference_report)
