"""The fairness figures of `sfqtui compare`, computed from any scheduler's event log.

- share: each user's fraction of the cost charged at congested dispatches (at least two
  users backlogged when the pick was made).
- worst gap: the largest |W_i - W_j| over intervals in which both i and j stay
  backlogged (the article's §3.2 quantity), exact.
- Jain's index over each user's charge (c / w) per congested dispatch it was backlogged
  for: 1.0 when every backlogged user progresses at the same weighted rate.
- wait p50 / p99 per user: dispatch time minus arrival time.
- worst gain (on request, for the schedulers whose audit bounds it: sfq and sfq-reset):
  the largest W_i - W_j over intervals in which only j stays backlogged (§3.3, any i),
  against 2 c_max, computed by the audit `sfqtui check` runs, so the figures agree.

The worst gap uses a reference f that advances at each dispatch by the charge divided by
the total weight backlogged (the progress of a fair fluid share). With y_i = C_i - f,
W_i - W_j = Δy_i - Δy_j, so an episode's largest rise plus another's largest drop bounds
every pair; pairs are then computed exactly from the largest bounds down until no bound
can beat the best gap found.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from sfqtui.core.analysis.audit import GrowingAudit
from sfqtui.core.analysis.engine_starts import Passing, StartView
from sfqtui.core.analysis.engine_waits import EngineWaits
from sfqtui.core.analysis.gaps import DispatchHistory, Episodes, Ranked
from sfqtui.core.analysis.prefix_figures import PrefixFigures, PrefixTally
from sfqtui.core.log.rows import LogRows, chunks_of, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers import traits

PAIR_BUDGET = 50_000


@dataclass(frozen=True)
class Gap:
    ahead: str
    behind: str
    start_t: float
    end_t: float
    gap: float


@dataclass(frozen=True)
class WorstGain:
    """The audit's worst W_i - W_j while j stayed backlogged (§3.3), where and against what bound."""

    ahead: str
    behind: str
    start_seq: int
    end_seq: int
    start_t: float
    end_t: float
    gain: float
    bound: float  # 2 c_max

    def as_dict(self) -> dict[str, object]:
        return {"gap": self.gain, "ahead": self.ahead, "behind": self.behind, "start_t": self.start_t, "end_t": self.end_t,
                "start_seq": self.start_seq, "end_seq": self.end_seq, "bound": self.bound}


@dataclass
class UserFigures:
    dispatched: int = 0
    charged: float = 0.0
    congested_charged: float = 0.0
    congested_backlogged: int = 0
    waits: array = field(default_factory=lambda: array("d"))

    def wait_quantile(self, q: float) -> float | None:
        if not self.waits:
            return None
        ordered = sorted(self.waits)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class FairnessReport:
    scheduler: str
    users: dict[str, UserFigures]
    congested_dispatches: int
    jain: float | None
    worst_gap: Gap | None
    gap_exact: bool
    worst_gain: WorstGain | None = None  # measured on request (fairness_of_replay(gains=True)) for sfq and sfq-reset
    # The same figures over engine starts (engine_starts.py), when asked for and the log has start rows; then how many
    # pairs of requests of two users started out of dispatch order.
    at_engine_start: FairnessReport | None = None
    out_of_dispatch_order: Passing | None = None
    waits: EngineWaits | None = None  # a replay on the engine model: each user's waits to dispatch and in the engines' queues
    prefix: PrefixFigures | None = None  # a replay whose engines model their prefix caches (semantics §14)

    def share(self, user: str) -> float:
        total = sum(f.congested_charged for f in self.users.values())
        return self.users[user].congested_charged / total if total else 0.0

    def as_dict(self) -> dict[str, object]:
        figures: dict[str, object] = {
            "congested_dispatches": self.congested_dispatches,
            "jain": self.jain,
            "worst_gap": self._gap(),
            "worst_gain": None if self.worst_gain is None else self.worst_gain.as_dict(),
            "at_engine_start": self._at_engine_start(),
            "users": self._users("dispatched"),
        }
        if self.prefix is not None:
            figures["prefix"] = self.prefix.as_dict()
        return figures

    def _gap(self) -> dict[str, object] | None:
        gap = self.worst_gap
        if gap is None:
            return None
        return {"gap": gap.gap, "ahead": gap.ahead, "behind": gap.behind, "start_t": gap.start_t, "end_t": gap.end_t, "exact": self.gap_exact}

    def _users(self, served: str) -> dict[str, object]:
        waits = self.waits
        return {
            u: {served: f.dispatched, "charged": f.charged, "share_congested": self.share(u), "wait_p50": f.wait_quantile(0.5),
                "wait_p99": f.wait_quantile(0.99)}
            | ({"engine_waits": waits.users[u].as_dict()} if waits is not None and u in waits.users else {})
            for u, f in sorted(self.users.items())
        }

    def _at_engine_start(self) -> dict[str, object] | None:
        """The figures at engine start, where a start is the engine's dispatch (the keys say so)."""
        started, passing = self.at_engine_start, self.out_of_dispatch_order
        if started is None:
            return None
        return {"congested_starts": started.congested_dispatches, "jain": started.jain, "worst_gap": started._gap(),
                "users": started._users("started"), "out_of_dispatch_order": None if passing is None else passing.as_dict()}


@dataclass
class _Backlog:
    """A user's backlog episode while it lasts: y's running min and max, its largest rise
    and drop so far, and the congested dispatches counted before it began."""

    start: int
    start_t: float
    low: float
    high: float
    congested_before: int
    rise: float = 0.0
    drop: float = 0.0


class FairnessTally:
    """The figures of one log, fed chunk by chunk (seq continuing across chunks).

    Kept: per-user figures (waits in a typed array), the arrival time of each request not
    yet dispatched, each user's dispatch history and backlog episodes in typed arrays.
    """

    def __init__(self, weights: dict[str, float] | None = None, gains_of: str | None = None, at_engine_start: bool = False) -> None:
        """``gains_of``: the scheduler whose audit to run alongside for the worst gain (None: not measured);
        ``at_engine_start``: also the figures over the log's start rows (``FairnessReport.at_engine_start``)."""
        self.weights = weights if weights is not None else {}
        self._starts = StartView() if at_engine_start else None
        self._at_start = FairnessTally(self.weights) if at_engine_start else None
        self._audit = GrowingAudit(gains_of) if gains_of is not None else None
        self._times = array("d")  # with the audit: each event's t, to say when its worst gain was
        self._first_seq = 0
        self.figures: dict[str, UserFigures] = {}
        self.arrived: dict[Hashable, float] = {}  # requests queued: their arrival time
        self.queued: dict[str, int] = {}
        self.backlogged_weight = 0.0
        self.reference = 0.0  # f: the progress of a fair fluid share
        self.congested = 0
        self.charged: dict[str, float] = {}
        self.history = DispatchHistory("d")
        self.backlogs: dict[str, _Backlog] = {}
        self.episodes = Episodes("d", with_rise=True)
        self.rows = 0

    def feed(self, rows: LogRows) -> None:
        first = self.rows
        if self._starts is not None and self._at_start is not None:
            self._at_start.feed(self._starts.convert(rows))
        if self._audit is not None and len(rows):
            if not first:
                self._first_seq = rows.seq[0]
            self._audit.feed(rows)
            self._times.extend(rows.t)
        for k, (kind, user, rid, t) in enumerate(zip(rows.kind, rows.user, rows.request_id, rows.t)):
            if user is None:
                continue
            if user not in self.figures:
                self.figures[user] = UserFigures()
            if kind == "arrive":
                self._arrive(first + k, user, rid, t)
            elif kind == "dispatch":
                self._dispatch(first + k, user, rid, t, rows.cost[k] or 0.0)
                self._leave(first + k, user)
            elif kind == "cancel":
                self.arrived.pop(rid, None)
                self._leave(first + k, user)
        self.rows += len(rows)

    def _arrive(self, position: int, user: str, rid: Hashable, t: float) -> None:
        self.arrived[rid] = t
        if self.queued.get(user, 0) == 0:
            self.backlogged_weight += self.weights.get(user, 1.0)
            y = self.charged.get(user, 0.0) - self.reference
            self.backlogs[user] = _Backlog(position, t, y, y, self.congested)
        self.queued[user] = self.queued.get(user, 0) + 1

    def _dispatch(self, position: int, user: str, rid: Hashable, t: float, cost: float) -> None:
        figure = self.figures[user]
        figure.dispatched += 1
        figure.charged += cost
        figure.waits.append(t - self.arrived.pop(rid, t))
        if len(self.backlogs) >= 2:
            self.congested += 1
            figure.congested_charged += cost
        charge = cost / self.weights.get(user, 1.0)
        before = self.charged.get(user, 0.0)
        y_low = before - self.reference
        self.reference += charge / self.backlogged_weight if self.backlogged_weight else 0.0
        total = self.charged[user] = before + charge
        self.history.add(user, position, total, t)
        y_high = total - self.reference
        backlog = self.backlogs.get(user)
        if backlog is not None:
            backlog.low = min(backlog.low, y_low)
            backlog.drop = max(backlog.drop, backlog.high - y_low)
            backlog.rise = max(backlog.rise, y_high - backlog.low)
            backlog.high = max(backlog.high, y_high)

    def _leave(self, position: int, user: str) -> None:
        """A request left the user's queue (dispatched or cancelled)."""
        left = self.queued[user] = self.queued.get(user, 0) - 1
        if left == 0 and user in self.backlogs:
            self.backlogged_weight -= self.weights.get(user, 1.0)
            self._close(user, position)

    def _close(self, user: str, position: int) -> None:
        backlog = self.backlogs.pop(user)
        drop = max(backlog.drop, backlog.high - (self.charged.get(user, 0.0) - self.reference))
        self.episodes.add(user, backlog.start, position, backlog.start_t, drop, backlog.rise)
        # The congested dispatches made while it lasted, counted once here rather than for
        # every backlogged user at each dispatch.
        self.figures[user].congested_backlogged += self.congested - backlog.congested_before

    def report(self, scheduler: str) -> FairnessReport:
        """The figures of everything fed so far (the backlogs still open end at the last event)."""
        if self._starts is not None and self._at_start is not None:
            self._at_start.feed(self._starts.flush(scheduler))
        for user in list(self.backlogs):
            self._close(user, self.rows - 1)
        worst, exact = _worst_gap(self.episodes, self.history)
        weights = self.weights
        rates = [
            f.congested_charged / weights.get(u, 1.0) / f.congested_backlogged
            for u, f in self.figures.items()
            if f.congested_backlogged
        ]
        jain = (sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))) if rates and any(rates) else None
        report = FairnessReport(scheduler, self.figures, self.congested, jain, worst, exact, self._worst_gain())
        starts = self._starts
        if starts is not None and starts.starts and self._at_start is not None:
            report.at_engine_start = self._at_start.report(scheduler)
            report.out_of_dispatch_order = starts.out_of_dispatch_order()
        return report

    def _worst_gain(self) -> WorstGain | None:
        if self._audit is None:
            return None
        audited = self._audit.report()
        found = audited.worst_gap
        if found is None:
            return None
        t = self._times
        return WorstGain(found.user, found.behind, found.start_seq, found.end_seq, t[found.start_seq - self._first_seq],
                         t[found.end_seq - self._first_seq], found.gap, 2 * audited.c_max)


def fairness(log: LogRows | Iterable[LogRows], weights: dict[str, float] | None = None, at_engine_start: bool = False) -> FairnessReport:
    """The figures of a log given whole or as consecutive chunks (the scheduler is the first chunk's)."""
    scheduler, chunks = chunks_of(log)
    tally = FairnessTally(weights, at_engine_start=at_engine_start)
    for rows in chunks:
        tally.feed(rows)
        del rows  # let this chunk go before the next one is read
    return tally.report(scheduler or "unknown")


def _worst_gap(episodes: Episodes, history: DispatchHistory) -> tuple[Gap | None, bool]:
    """The largest rise first against the largest drops, until no bound can beat the best found."""
    rise, drop, start, end, user = episodes.rise, episodes.drop, episodes.start, episodes.end, episodes.user
    assert rise is not None
    droppers = Ranked(drop)
    largest_drop = next((drop[b] for b in droppers), 0.0)
    best: Gap | None = None
    budget = PAIR_BUDGET
    exact = True
    for a in Ranked(rise):
        if rise[a] <= 0 or (best is not None and rise[a] + largest_drop <= best.gap):
            break
        ahead = episodes.user_of(a)
        for b in droppers:
            if best is not None and rise[a] + drop[b] <= best.gap:
                break
            if end[a] < start[b] or end[b] < start[a] or user[a] == user[b]:
                continue
            budget -= 1
            if budget < 0:
                exact = False
                break
            behind = episodes.user_of(b)
            later = a if start[a] >= start[b] else b
            found = history.gain(ahead, behind, start[later], min(end[a], end[b]), episodes.start_label[later])
            if found is not None and (best is None or found.gain > best.gap):
                best = Gap(ahead, behind, found.start, found.end, found.gain)
        if budget < 0:
            break
    return best, exact


def fairness_of_replay(trace: Trace, config: ReplayConfig, progress: Callable[[int], None] | None = None,
                       gains: bool = False) -> FairnessReport:
    """Replay ``trace`` under ``config`` and compute its fairness figures (what `compare`
    prints for one scheduler), chunk by chunk as the replay goes. ``progress`` gets the
    number of requests arrived so far. With ``gains``, also the worst gain of §3.3 where
    the scheduler's audit bounds it (only SFQ's rules measure it). A replay on the engine
    model also gets the figures over its start rows, and each user's waits; so does a recording
    replayed as it ran, over the engine starts it recorded (replay/recorded_starts.py)."""
    run = Replay(trace, config)
    measured = gains and traits(config.scheduler).audit == "sfq"
    tally = FairnessTally(trace.weights, gains_of=config.scheduler if measured else None,
                          at_engine_start=config.engine is not None or run.plan.starts_recorded)
    waits = EngineWaits() if config.engine is not None else None
    prefix = PrefixTally(trace, config.engine.engines) if config.engine is not None and trace.prefix_blocks is not None else None
    for columns, arrived in run.chunks():
        rows = rows_from_replay(columns, trace, config.scheduler)
        tally.feed(rows)
        if prefix is not None:
            prefix.feed(columns)
        if waits is not None:
            waits.feed(rows)
        if progress is not None:
            progress(arrived)
    report = tally.report(config.scheduler)
    report.waits = waits
    report.prefix = None if prefix is None else prefix.figures
    return report
