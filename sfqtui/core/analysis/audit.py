"""`sfqtui check`: verify a log against semantics §3 and the article's §3.1-§3.3.

For SFQ logs it re-derives every join, pick, charge and idle reset from the log itself
(so tampered meters or v are caught), checks the band invariant of §3.1, and bounds
W_i - W_j over every interval in which j stays backlogged (§3.2 for two backlogged
users, §3.3 for any i against a backlogged j) by 2 c_max.

The bound is checked through y_i = C_i - v (C_i: i's cumulative charge c/w). For any
interval, W_i - W_j = Δy_i - Δy_j, so if every user's y rises by at most c_max over any
interval and every backlogged user's y drops by at most c_max, the bound holds. Both are
computed in one pass; exact pairs are computed for the worst candidates and wherever
the sufficient test fails.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Sequence

from sfqtui.core.analysis.gaps import History, max_gain
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import fmt
from sfqtui.core.schedulers.registry import REGISTRY, SchedulerTraits

MAX_LISTED = 20
TOP_CANDIDATES = 5


@dataclass(frozen=True)
class Violation:
    rule: str
    seq: int
    message: str


@dataclass(frozen=True)
class PairGap:
    """user gained ``gap`` of charged cost over ``behind`` between two events, while ``behind`` stayed backlogged."""

    user: str
    behind: str
    start_seq: int
    end_seq: int
    gap: float


@dataclass
class Margin:
    """The closest a rule came to breaking: the smallest slack and where."""

    slack: float = float("inf")
    seq: int = -1
    detail: str = ""

    def see(self, slack: float, seq: int, detail: str) -> None:
        if slack < self.slack:
            self.slack, self.seq, self.detail = slack, seq, detail


@dataclass
class AuditReport:
    scheduler: str
    events: int
    users: int
    dispatches: int
    c_max: float = 0.0
    checks: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    violation_count: int = 0
    upper_margin: Margin = field(default_factory=Margin)
    lower_margin: Margin = field(default_factory=Margin)
    worst_gap: PairGap | None = None

    def failed(self, rules: tuple[str, ...]) -> bool:
        return any(v.rule in rules for v in self.violations)

    @property
    def ok(self) -> bool:
        return self.violation_count == 0

    def add(self, rule: str, seq: int, message: str) -> None:
        self.violation_count += 1
        if len(self.violations) < MAX_LISTED:
            self.violations.append(Violation(rule, seq, message))


@dataclass
class _Episode:
    user: str
    start: int
    end: int | None = None
    run_max: float = 0.0
    drop: float = 0.0


def audit(log: LogRows) -> AuditReport:
    sched = log.scheduler
    users = {u for u in log.user if u is not None}
    report = AuditReport(sched, len(log), len(users), sum(1 for k in log.kind if k == "dispatch"))
    _audit_structure(log, report)
    rules = REGISTRY[sched].audit if sched in REGISTRY else None
    if rules == "sfq":
        _audit_sfq(log, report, REGISTRY[sched])
    elif rules == "drr":
        _audit_drr(log, report)
    return report


def _audit_structure(log: LogRows, report: AuditReport) -> None:
    """Every scheduler: seq counts up from 0, time never goes back, each request arrives, is dispatched, completes."""
    report.checks.append((("structure",), "seq counts 0, 1, 2, ...; t never decreases; arrive -> dispatch -> complete per request"))
    stage: dict[str, str] = {}
    order = {"arrive": ("", "arrive"), "dispatch": ("arrive", "dispatch"), "complete": ("dispatch", "complete"), "cancel": ("arrive", "cancel")}
    last_t = float("-inf")
    for k in range(len(log)):
        seq, t, kind, rid = log.seq[k], log.t[k], log.kind[k], log.request_id[k]
        if seq != k:
            report.add("structure", seq, f"seq {seq} at row {k}: seq must count 0, 1, 2, ...")
        if t < last_t:
            report.add("structure", seq, f"t went back from {last_t} to {t}")
        last_t = max(last_t, t)
        if kind in order and rid is not None:
            expected, now = order[kind]
            if stage.get(rid, "") != expected:
                report.add("structure", seq, f"request {rid}: {kind} after {stage.get(rid) or 'nothing'}")
            stage[rid] = now


def _weight(log: LogRows, k: int) -> float:
    if log.weight is None:
        return 1.0
    w = log.weight[k]
    return 1.0 if w is None else w


def _audit_sfq(log: LogRows, report: AuditReport, traits: SchedulerTraits) -> None:
    reset_join = traits.reset_join
    join = "S_i <- v" if reset_join else "S_i <- max(S_i, v)"
    report.checks += [
        (("§3.1 (1)",), "§3.1 (1) v never decreases"),
        (("§3.1 (2)",), "§3.1 (2) every meter <= v + c_max"),
        (("§3.1 (3)",), "§3.1 (3) every backlogged user's meter >= v"),
        (("§3", "§3 join", "§3 pick", "§3 charge", "§3 idle reset"), f"§3 join {join}, pick argmin (S_i, id), charge S_i + c/w, idle reset v <- max(v, max S_i)"),
        (("§3.2/§3.3",), "§3.2/§3.3 W_i - W_j <= 2 c_max while j stays backlogged"),
    ]
    queued: dict[str, int] = {}
    meter: dict[str, float] = {}
    charged: dict[str, float] = {}
    heap: list[tuple[float, str]] = []
    v = 0.0
    c_max = 0.0
    max_meter = float("-inf")
    # y = C - v bookkeeping
    low: dict[str, tuple[float, int]] = {}
    rise: dict[str, tuple[float, int, int]] = {}
    episodes: dict[str, _Episode] = {}
    closed: list[_Episode] = []
    dispatch_log: History = {}

    def backlogged_min() -> tuple[float, str] | None:
        while heap:
            m, u = heap[0]
            if queued.get(u, 0) and meter.get(u) == m:
                return heap[0]
            heapq.heappop(heap)
        return None

    for k in range(len(log)):
        seq, kind, user = log.seq[k], log.kind[k], log.user[k]
        v_row, m_row = log.v[k], log.meter[k]
        v_before = v
        if v_row is None:
            report.add("§3.1 (1)", seq, f"{kind} row has no v")
            continue
        if v_row < v:
            report.add("§3.1 (1)", seq, f"v decreased from {v!r} to {v_row!r}")
        if kind == "idle_reset":
            expected = max(v, max_meter)
            if backlogged_min() is not None:
                report.add("§3 idle reset", seq, "idle_reset while users are still backlogged")
            if v_row != expected:
                report.add("§3 idle reset", seq, f"idle reset set v = {v_row!r}; max(v, max S_i) is {expected!r}")
            v = v_row
            continue
        if user is None or m_row is None:
            if kind in ("arrive", "dispatch", "complete", "cancel"):
                report.add("structure", seq, f"{kind} row without user or meter")
            continue
        if kind == "arrive":
            if v_row != v:
                report.add("§3 join", seq, f"an arrival changed v from {v!r} to {v_row!r}")
            v = v_row
            if queued.get(user, 0) == 0:
                previous = meter.get(user)
                expected = v if (reset_join or previous is None or previous < v) else previous
                if m_row != expected:
                    rule = "S_i <- v" if reset_join else "max(S_i, v)"
                    report.add("§3 join", seq, f"{user} joined with meter {m_row!r}; {rule} gives {expected!r}")
                heapq.heappush(heap, (m_row, user))
                episodes[user] = _Episode(user, k, run_max=charged.get(user, 0.0) - v)
                low.setdefault(user, (charged.get(user, 0.0) - v, k))
            elif m_row != meter.get(user):
                report.add("§3 join", seq, f"{user} was already queued but its meter moved to {m_row!r}")
            queued[user] = queued.get(user, 0) + 1
            meter[user] = m_row
            max_meter = max(max_meter, m_row)
        elif kind == "dispatch":
            cost = log.cost[k]
            if cost is None or not cost > 0:
                report.add("§3 charge", seq, f"dispatch with cost {cost!r}; every cost must be > 0")
                continue
            charge = cost / _weight(log, k)
            c_max = max(c_max, charge)
            top = backlogged_min()
            if queued.get(user, 0) == 0:
                report.add("§3 pick", seq, f"{user} was dispatched with nothing queued")
            elif top is not None and top != (meter[user], user):
                report.add("§3 pick", seq, f"picked {user} at meter {meter[user]!r}; the smallest (S_i, id) was {top[1]} at {top[0]!r}")
            if v_row != meter.get(user):
                report.add("§3 pick", seq, f"the pick set v = {v_row!r}; {user}'s meter was {meter.get(user)!r}")
            expected = v_row + charge
            if m_row != expected:
                report.add("§3 charge", seq, f"{user}'s meter became {m_row!r}; S_i + c/w = {expected!r}")
            v = v_row
            queued[user] = queued.get(user, 0) - 1
            meter[user] = m_row
            max_meter = max(max_meter, m_row)
            report.upper_margin.see(v + c_max - m_row, seq, f"{user} meter {fmt(m_row)}, v {fmt(v)}")
            if m_row > v + c_max:
                report.add("§3.1 (2)", seq, f"{user}'s meter {m_row!r} > v + c_max = {v + c_max!r}")
            if queued[user] > 0:
                heapq.heappush(heap, (m_row, user))
            # y = C - v: the low just before this charge, the high just after.
            before = charged.get(user, 0.0)
            after = before + charge
            charged[user] = after
            times, totals = dispatch_log.setdefault(user, ([], []))
            times.append(k)
            totals.append(after)
            y_low, y_high = before - v_before, after - v
            if y_low < low.get(user, (float("inf"), 0))[0]:
                low[user] = (y_low, k - 1)
            gain = y_high - low[user][0]
            if gain > rise.get(user, (float("-inf"), 0, 0))[0]:
                rise[user] = (gain, low[user][1], k)
            episode = episodes.get(user)
            if episode is not None:
                episode.drop = max(episode.drop, episode.run_max - y_low)
                episode.run_max = max(episode.run_max, y_high)
                if queued[user] == 0:
                    episode.end = k
                    closed.append(episodes.pop(user))
            smallest = backlogged_min()
            if smallest is not None:
                report.lower_margin.see(smallest[0] - v, seq, f"{smallest[1]} meter {fmt(smallest[0])}, v {fmt(v)}")
                if smallest[0] < v:
                    report.add("§3.1 (3)", seq, f"backlogged {smallest[1]} has meter {smallest[0]!r} < v = {v!r}")
        else:
            if v_row != v:
                report.add("§3", seq, f"a {kind} changed v from {v!r} to {v_row!r}")
            if m_row != meter.get(user):
                report.add("§3", seq, f"a {kind} changed {user}'s meter to {m_row!r}; only joins and charges move meters")
            if kind == "cancel":
                queued[user] = queued.get(user, 0) - 1
                if queued[user] == 0 and user in episodes:
                    episode = episodes.pop(user)
                    episode.end = k
                    closed.append(episode)

    last_seq = len(log) - 1
    for user, episode in episodes.items():
        episode.drop = max(episode.drop, episode.run_max - (charged.get(user, 0.0) - v))
        episode.end = last_seq
        closed.append(episode)
    report.c_max = c_max
    _bound(report, rise, closed, dispatch_log, c_max, log.seq)


def _bound(
    report: AuditReport,
    rise: dict[str, tuple[float, int, int]],
    episodes: list[_Episode],
    dispatch_log: History,
    c_max: float,
    seqs: Sequence[int],
) -> None:
    limit = 2 * c_max
    risers = sorted(rise, key=lambda u: -rise[u][0])
    droppers = sorted(episodes, key=lambda e: -e.drop)
    pairs: set[tuple[str, int]] = set()
    for i in risers[:TOP_CANDIDATES]:
        for e in droppers[:TOP_CANDIDATES]:
            pairs.add((i, id(e)))
    for i in risers:
        for e in droppers:
            if rise[i][0] + e.drop <= limit:
                break
            pairs.add((i, id(e)))
    by_id = {id(e): e for e in episodes}
    for i, eid in sorted(pairs, key=lambda p: (p[0], by_id[p[1]].start)):
        episode = by_id[eid]
        if episode.user == i:
            continue
        found = max_gain(i, episode.user, episode.start, episode.end if episode.end is not None else episode.start, dispatch_log)
        if found is None:
            continue
        gap = PairGap(i, episode.user, seqs[found[1]], seqs[found[2]], found[0])
        if report.worst_gap is None or gap.gap > report.worst_gap.gap:
            report.worst_gap = gap
        if gap.gap > limit:
            report.add("§3.2/§3.3", gap.end_seq, f"{gap.user} gained {fmt(gap.gap)} over backlogged {gap.behind} between seq {gap.start_seq} and {gap.end_seq}; 2 c_max = {fmt(limit)}")


def _audit_drr(log: LogRows, report: AuditReport) -> None:
    report.checks.append((("§4",), "§4 deficits >= 0; no dispatch costs more than the deficit it was sent against"))
    for k in range(len(log)):
        deficit = log.deficit[k]
        if deficit is not None and deficit < 0:
            report.add("§4", log.seq[k], f"{log.user[k]}'s deficit {deficit!r} < 0")
        if log.kind[k] == "dispatch" and log.credit is not None:
            credit, cost = log.credit[k], log.cost[k]
            if credit is not None and cost is not None and cost > credit:
                report.add("§4", log.seq[k], f"{log.user[k]} sent cost {cost!r} against a deficit of {credit!r}")
