"""`sfqtui check`: verify a log against semantics §3, §4, §9 and the article's §3.1-§3.3.

The log is read once, whole or chunk by chunk, by one rule set per concern: the
structure every log must have, then the scheduler's own rules (picked from the registry).
A rule set keeps per-user state, the requests still queued or running, and what the
gap computation needs (per-user dispatch histories and backlog episodes, in typed
arrays), so its memory does not grow with the events it has read.

For SFQ logs it re-derives every join, pick, charge and idle reset from the log itself
(so tampered meters or v are caught), checks the band invariant of §3.1, and bounds
W_i - W_j over every interval in which j stays backlogged (§3.2 for two backlogged
users, §3.3 for any i against a backlogged j) by 2 c_max.

The bound is checked through y_i = C_i - v (C_i: i's cumulative charge c/w). For any
interval, W_i - W_j = Δy_i - Δy_j, so if every user's y rises by at most c_max over any
interval and every backlogged user's y drops by at most c_max, the bound holds. Both are
computed in one pass; exact pairs are computed for the worst candidates and wherever
the sufficient test fails.

For VTC logs (§9) it re-derives every join, pick and charge: the input charge at
dispatch, and the output charge at completion from the complete row's output_tokens.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence

from sfqtui.core.analysis.gaps import DispatchHistory, Episodes, Ranked
from sfqtui.core.engine.estimator import EstimatorParams
from sfqtui.core.log.rows import LogRows, chunks_of
from sfqtui.core.numbers import fmt
from sfqtui.core.schedulers.registry import REGISTRY

MAX_LISTED = 20
ROUNDING = 1e-9  # relative: see SFQRules._rounding
TOP_CANDIDATES = 5
DEFAULT_OUTPUT_WEIGHT = EstimatorParams.output_weight  # b, when a log does not record it (semantics §9)

Checks = list[tuple[tuple[str, ...], str]]


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

    def see(self, slack: float, seq: int, user: str, meter: float, v: float) -> None:
        if slack < self.slack:
            self.slack, self.seq, self.detail = slack, seq, f"{user} meter {fmt(meter)}, v {fmt(v)}"


@dataclass
class AuditReport:
    scheduler: str
    events: int
    users: int
    dispatches: int
    c_max: float = 0.0
    checks: Checks = field(default_factory=list)
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


@dataclass
class Findings:
    """One rule set's violations: how many, and the first MAX_LISTED."""

    count: int = 0
    listed: list[Violation] = field(default_factory=list)

    def add(self, rule: str, seq: int, message: str) -> None:
        self.count += 1
        if len(self.listed) < MAX_LISTED:
            self.listed.append(Violation(rule, seq, message))


class RuleSet(ABC):
    """Rules checked over a whole log, fed chunk by chunk."""

    def __init__(self) -> None:
        self.findings = Findings()
        self.rows = 0  # rows fed so far: the position of the next chunk's first row

    def feed(self, rows: LogRows) -> None:
        self._feed(rows, self.rows)
        self.rows += len(rows)

    @abstractmethod
    def _feed(self, rows: LogRows, first: int) -> None:
        """Check ``rows``, the first of which is row ``first`` of the log."""

    @abstractmethod
    def checks(self) -> Checks:
        """What this rule set checked: (rules, line) for the report."""

    def finish(self, report: AuditReport) -> None:
        """Called once after the last chunk: complete what needs the whole log."""


def audit(log: LogRows | Iterable[LogRows], output_weight: float | None = None) -> AuditReport:
    """Audit a log given whole or as consecutive chunks (seq continuing across them; the
    scheduler is the first chunk's). ``output_weight`` is the b the log was made with
    (VTC's completion charge, recorded in the log's metadata; None: not known, the
    default is assumed)."""
    scheduler, chunks = chunks_of(log)
    growing = GrowingAudit(scheduler or "unknown", output_weight)
    for rows in chunks:
        growing.feed(rows)
        del rows  # let this chunk go before the next one is read
    return growing.report()


class GrowingAudit:
    """The audit of a log fed chunk by chunk, also one that is still growing (a live
    stream): the violations found so far can be read at any time. The 2 c_max bound of
    §3.2/§3.3 needs whole backlog episodes, so it is checked by ``report``, at the end."""

    def __init__(self, scheduler: str, output_weight: float | None = None) -> None:
        self.scheduler = scheduler
        self._structure = StructureRules()
        own = _own_rules(scheduler, output_weight)
        self._rule_sets: list[RuleSet] = [self._structure] + ([own] if own is not None else [])

    def feed(self, rows: LogRows) -> None:
        for rule_set in self._rule_sets:
            rule_set.feed(rows)

    def violations_so_far(self) -> list[int]:
        """The seqs of the violations found so far (the first MAX_LISTED of each rule set)."""
        return sorted({v.seq for rule_set in self._rule_sets for v in rule_set.findings.listed})

    def report(self) -> AuditReport:
        """Finish the audit (once): the whole-log checks, and every finding."""
        structure = self._structure
        report = AuditReport(self.scheduler, structure.rows, len(structure.users - {None}), structure.dispatches)
        for rule_set in self._rule_sets:
            rule_set.finish(report)
            report.checks += rule_set.checks()
            report.violation_count += rule_set.findings.count
            report.violations += rule_set.findings.listed
        del report.violations[MAX_LISTED:]
        return report


def _own_rules(scheduler: str, output_weight: float | None) -> RuleSet | None:
    """The scheduler's own rule set, as the registry names it (None: structure only)."""
    traits = REGISTRY.get(scheduler)
    if traits is None or traits.audit is None:
        return None
    if traits.audit == "sfq":
        return SFQRules(traits.reset_join)
    if traits.audit == "drr":
        return DRRRules()
    return VTCRules(output_weight)


def _weight(weights: Sequence[float | None] | None, k: int) -> float:
    if weights is None:
        return 1.0
    w = weights[k]
    return 1.0 if w is None else w


class StructureRules(RuleSet):
    """Every scheduler: seq counts up from 0, time never goes back, each request arrives, is dispatched, completes."""

    # kind -> (the stage a request must be in, the stage it moves to; None: its life is over)
    LIFE: dict[str, tuple[str, str | None]] = {
        "arrive": ("", "arrive"), "dispatch": ("arrive", "dispatch"), "complete": ("dispatch", None), "cancel": ("arrive", None),
    }

    def __init__(self) -> None:
        super().__init__()
        self.stage: dict[Hashable, str] = {}  # requests arrived or dispatched, not yet finished
        self.last_t = float("-inf")
        self.users: set[str | None] = set()
        self.dispatches = 0

    def checks(self) -> Checks:
        return [(("structure",), "seq counts 0, 1, 2, ...; t never decreases; arrive -> dispatch -> complete per request")]

    def _feed(self, rows: LogRows, first: int) -> None:
        add, stage, life = self.findings.add, self.stage, self.LIFE
        last_t = self.last_t
        for k, (seq, t, kind, rid) in enumerate(zip(rows.seq, rows.t, rows.kind, rows.request_id), first):
            if seq != k:
                add("structure", seq, f"seq {seq} at row {k}: seq must count 0, 1, 2, ...")
            if t < last_t:
                add("structure", seq, f"t went back from {last_t} to {t}")
            last_t = max(last_t, t)
            if kind in life and rid is not None:
                expected, now = life[kind]
                if stage.get(rid, "") != expected:
                    add("structure", seq, f"request {rid}: {kind} after {stage.get(rid) or 'nothing'}")
                if now is None:
                    stage.pop(rid, None)
                else:
                    stage[rid] = now
        self.last_t = last_t
        self.users.update(rows.user)
        self.dispatches += sum(1 for kind in rows.kind if kind == "dispatch")


@dataclass
class _Backlog:
    """An SFQ user's backlog episode while it lasts: y's running max and largest drop so far."""

    start: int
    start_seq: int
    run_max: float
    drop: float = 0.0


class SFQRules(RuleSet):
    """§3 (or its reset-join variant): joins, picks, charges and idle resets re-derived;
    the band invariant of §3.1; the 2 c_max bound of §3.2/§3.3."""

    def __init__(self, reset_join: bool) -> None:
        super().__init__()
        self.reset_join = reset_join
        self.queued: dict[str, int] = {}
        self.meter: dict[str, float] = {}
        self.charged: dict[str, float] = {}  # C_i: the user's cumulative charge c/w
        self.heap: list[tuple[float, str]] = []  # (meter, user) of backlogged users; stale entries skipped
        self.v = 0.0
        self.c_max = 0.0
        self.max_meter = float("-inf")
        # y = C - v: each user's lowest y so far and largest rise, and its backlog episodes.
        self.low: dict[str, float] = {}
        self.rise: dict[str, float] = {}
        self.backlogs: dict[str, _Backlog] = {}
        self.episodes = Episodes("q")
        self.history = DispatchHistory("q")
        self.upper_margin = Margin()
        self.lower_margin = Margin()

    def checks(self) -> Checks:
        join = "S_i <- v" if self.reset_join else "S_i <- max(S_i, v)"
        return [
            (("§3.1 (1)",), "§3.1 (1) v never decreases"),
            (("§3.1 (2)",), "§3.1 (2) every meter <= v + c_max"),
            (("§3.1 (3)",), "§3.1 (3) every backlogged user's meter >= v"),
            (("§3", "§3 join", "§3 pick", "§3 charge", "§3 idle reset"), f"§3 join {join}, pick argmin (S_i, id), charge S_i + c/w, idle reset v <- max(v, max S_i)"),
            (("§3.2/§3.3",), "§3.2/§3.3 W_i - W_j <= 2 c_max while j stays backlogged"),
        ]

    def _backlogged_min(self) -> tuple[float, str] | None:
        heap, queued, meter = self.heap, self.queued, self.meter
        while heap:
            m, u = heap[0]
            if queued.get(u, 0) and meter.get(u) == m:
                return heap[0]
            heapq.heappop(heap)
        return None

    def _feed(self, rows: LogRows, first: int) -> None:
        add = self.findings.add
        for k, (seq, kind, user, v_row, m_row) in enumerate(zip(rows.seq, rows.kind, rows.user, rows.v, rows.meter)):
            if v_row is None:
                add("§3.1 (1)", seq, f"{kind} row has no v")
                continue
            if v_row < self.v:
                add("§3.1 (1)", seq, f"v decreased from {self.v!r} to {v_row!r}")
            if kind == "idle_reset":
                self._idle_reset(seq, v_row)
            elif user is None or m_row is None:
                if kind in ("arrive", "dispatch", "complete", "cancel"):
                    add("structure", seq, f"{kind} row without user or meter")
            elif kind == "arrive":
                self._arrive(first + k, seq, user, v_row, m_row)
            elif kind == "dispatch":
                self._dispatch(first + k, seq, user, v_row, m_row, rows.cost[k], _weight(rows.weight, k))
            else:
                self._other(first + k, seq, kind, user, v_row, m_row)

    def _idle_reset(self, seq: int, v_row: float) -> None:
        expected = max(self.v, self.max_meter)
        if self._backlogged_min() is not None:
            self.findings.add("§3 idle reset", seq, "idle_reset while users are still backlogged")
        if v_row != expected:
            self.findings.add("§3 idle reset", seq, f"idle reset set v = {v_row!r}; max(v, max S_i) is {expected!r}")
        self.v = v_row

    def _arrive(self, position: int, seq: int, user: str, v_row: float, m_row: float) -> None:
        add = self.findings.add
        if v_row != self.v:
            add("§3 join", seq, f"an arrival changed v from {self.v!r} to {v_row!r}")
        v = self.v = v_row
        if self.queued.get(user, 0) == 0:
            previous = self.meter.get(user)
            expected = v if (self.reset_join or previous is None or previous < v) else previous
            if m_row != expected:
                rule = "S_i <- v" if self.reset_join else "max(S_i, v)"
                add("§3 join", seq, f"{user} joined with meter {m_row!r}; {rule} gives {expected!r}")
            heapq.heappush(self.heap, (m_row, user))
            y = self.charged.get(user, 0.0) - v
            self.backlogs[user] = _Backlog(position, seq, run_max=y)
            self.low.setdefault(user, y)
        elif m_row != self.meter.get(user):
            add("§3 join", seq, f"{user} was already queued but its meter moved to {m_row!r}")
        self.queued[user] = self.queued.get(user, 0) + 1
        self.meter[user] = m_row
        self.max_meter = max(self.max_meter, m_row)

    def _dispatch(self, position: int, seq: int, user: str, v_row: float, m_row: float, cost: float | None, weight: float) -> None:
        add = self.findings.add
        if cost is None or not cost > 0:
            add("§3 charge", seq, f"dispatch with cost {cost!r}; every cost must be > 0")
            return
        charge = cost / weight
        c_max = self.c_max = max(self.c_max, charge)
        meter = self.meter
        top = self._backlogged_min()
        if self.queued.get(user, 0) == 0:
            add("§3 pick", seq, f"{user} was dispatched with nothing queued")
        elif top is not None and top != (meter[user], user):
            add("§3 pick", seq, f"picked {user} at meter {meter[user]!r}; the smallest (S_i, id) was {top[1]} at {top[0]!r}")
        if v_row != meter.get(user):
            add("§3 pick", seq, f"the pick set v = {v_row!r}; {user}'s meter was {meter.get(user)!r}")
        expected = v_row + charge
        if m_row != expected:
            add("§3 charge", seq, f"{user}'s meter became {m_row!r}; S_i + c/w = {expected!r}")
        v_before = self.v
        v = self.v = v_row
        left = self.queued[user] = self.queued.get(user, 0) - 1
        meter[user] = m_row
        self.max_meter = max(self.max_meter, m_row)
        self.upper_margin.see(v + c_max - m_row, seq, user, m_row, v)
        if m_row > v + c_max:
            add("§3.1 (2)", seq, f"{user}'s meter {m_row!r} > v + c_max = {v + c_max!r}")
        if left > 0:
            heapq.heappush(self.heap, (m_row, user))
        self._charge(position, seq, user, charge, v_before, left)
        smallest = self._backlogged_min()
        if smallest is not None:
            self.lower_margin.see(smallest[0] - v, seq, smallest[1], smallest[0], v)
            if smallest[0] < v:
                add("§3.1 (3)", seq, f"backlogged {smallest[1]} has meter {smallest[0]!r} < v = {v!r}")

    def _charge(self, position: int, seq: int, user: str, charge: float, v_before: float, left: int) -> None:
        """y = C - v around a charge: the low just before it, the high just after."""
        before = self.charged.get(user, 0.0)
        after = self.charged[user] = before + charge
        self.history.add(user, position, after, seq)
        y_low, y_high = before - v_before, after - self.v
        if y_low < self.low.get(user, float("inf")):
            self.low[user] = y_low
        gain = y_high - self.low[user]
        if gain > self.rise.get(user, float("-inf")):
            self.rise[user] = gain
        backlog = self.backlogs.get(user)
        if backlog is not None:
            backlog.drop = max(backlog.drop, backlog.run_max - y_low)
            backlog.run_max = max(backlog.run_max, y_high)
            if left == 0:
                self._close(user, position)

    def _close(self, user: str, position: int) -> None:
        backlog = self.backlogs.pop(user)
        self.episodes.add(user, backlog.start, position, backlog.start_seq, backlog.drop)

    def _other(self, position: int, seq: int, kind: str, user: str, v_row: float, m_row: float) -> None:
        if v_row != self.v:
            self.findings.add("§3", seq, f"a {kind} changed v from {self.v!r} to {v_row!r}")
        if m_row != self.meter.get(user):
            self.findings.add("§3", seq, f"a {kind} changed {user}'s meter to {m_row!r}; only joins and charges move meters")
        if kind == "cancel":
            left = self.queued[user] = self.queued.get(user, 0) - 1
            if left == 0 and user in self.backlogs:
                self._close(user, position)

    def finish(self, report: AuditReport) -> None:
        last = self.rows - 1
        for user, backlog in self.backlogs.items():
            drop = max(backlog.drop, backlog.run_max - (self.charged.get(user, 0.0) - self.v))
            self.episodes.add(user, backlog.start, last, backlog.start_seq, drop)
        self.backlogs.clear()
        report.c_max = self.c_max
        report.upper_margin, report.lower_margin = self.upper_margin, self.lower_margin
        report.worst_gap = self._bound()

    def _rounding(self, i: str, j: str) -> float:
        """How far float rounding can move W_i - W_j: the cumulative charges are float
        sums, each off by at most a few units in the last place per addition, so a gap
        within ROUNDING of the two users' totals over the bound is not a violation."""
        charges = self.history.charges
        largest = max((charges[u][1][-1] for u in (i, j) if u in charges and len(charges[u][1])), default=0.0)
        return ROUNDING * largest

    def _bound(self) -> PairGap | None:
        """Exact W_i - W_j for the worst candidates and every pair the sufficient test lets through."""
        limit = 2 * self.c_max
        rise, episodes = self.rise, self.episodes
        risers = sorted(rise, key=lambda u: -rise[u])
        droppers = Ranked(episodes.drop)
        pairs = {(i, e) for i in risers[:TOP_CANDIDATES] for e in droppers.first(TOP_CANDIDATES)}
        for i in risers:
            for e in droppers:
                if rise[i] + episodes.drop[e] <= limit:
                    break
                pairs.add((i, e))
        worst: PairGap | None = None
        for i, e in sorted(pairs, key=lambda p: (p[0], episodes.start[p[1]])):
            behind = episodes.user_of(e)
            if behind == i:
                continue
            found = self.history.gain(i, behind, episodes.start[e], episodes.end[e], episodes.start_label[e])
            if found is None:
                continue
            gap = PairGap(i, behind, int(found.start), int(found.end), found.gain)
            if worst is None or gap.gap > worst.gap:
                worst = gap
            if gap.gap > limit + self._rounding(i, behind):
                self.findings.add("§3.2/§3.3", gap.end_seq, f"{gap.user} gained {fmt(gap.gap)} over backlogged {gap.behind} between seq {gap.start_seq} and {gap.end_seq}; 2 c_max = {fmt(limit)}")
        return worst


class DRRRules(RuleSet):
    """§4: deficits never negative, and no dispatch costs more than the deficit it was sent against."""

    def checks(self) -> Checks:
        return [(("§4",), "§4 deficits >= 0; no dispatch costs more than the deficit it was sent against")]

    def _feed(self, rows: LogRows, first: int) -> None:
        add, credits = self.findings.add, rows.credit
        for k, (seq, kind, user, deficit, cost) in enumerate(zip(rows.seq, rows.kind, rows.user, rows.deficit, rows.cost)):
            if deficit is not None and deficit < 0:
                add("§4", seq, f"{user}'s deficit {deficit!r} < 0")
            if kind == "dispatch" and credits is not None:
                credit = credits[k]
                if credit is not None and cost is not None and cost > credit:
                    add("§4", seq, f"{user} sent cost {cost!r} against a deficit of {credit!r}")


class VTCRules(RuleSet):
    """§9: every join, pick and charge re-derived from the log's counters (``meter``).

    A completion must add b * output_tokens / w; a log without output_tokens (format 1)
    is only checked for a counter that did not go down there.
    """

    def __init__(self, output_weight: float | None) -> None:
        super().__init__()
        self.output_weight = DEFAULT_OUTPUT_WEIGHT if output_weight is None else output_weight
        self.output_weight_known = output_weight is not None
        self.outputs_known = True  # every chunk so far had the output_tokens column
        self.queued: dict[str, int] = {}
        self.counter: dict[str, float] = {}
        self.heap: list[tuple[float, str]] = []  # (counter, user) of backlogged users; stale entries skipped

    def checks(self) -> Checks:
        b = fmt(self.output_weight) if self.output_weight_known else f"{fmt(self.output_weight)}, the default: the log does not record it"
        completion = f"C_i + b output_tokens/w (b = {b})" if self.outputs_known else "no decrease (no output_tokens in the log)"
        return [
            (("§9", "§9 join", "§9 pick", "§9 charge"),
             f"§9 join C_i <- max(C_i, min C_j of the other backlogged users), pick argmin (C_i, id), charge C_i + cost/w "
             f"at dispatch and {completion} at completion; nothing else moves a counter"),
        ]

    def _smallest(self) -> tuple[float, str] | None:
        heap, queued, counter = self.heap, self.queued, self.counter
        while heap:
            c, u = heap[0]
            if queued.get(u, 0) and counter.get(u) == c:
                return heap[0]
            heapq.heappop(heap)
        return None

    def _feed(self, rows: LogRows, first: int) -> None:
        add = self.findings.add
        outputs = rows.output_tokens
        self.outputs_known = self.outputs_known and outputs is not None
        for k, (seq, kind, user, m_row) in enumerate(zip(rows.seq, rows.kind, rows.user, rows.meter)):
            if kind == "idle_reset":
                add("§9", seq, "an idle_reset row: VTC has no idle reset")
            elif user is None or m_row is None:
                if kind in ("arrive", "dispatch", "complete", "cancel"):
                    add("structure", seq, f"{kind} row without user or meter")
            elif kind == "arrive":
                self._arrive(seq, user, m_row)
            elif kind == "dispatch":
                self._dispatch(seq, user, m_row, rows.cost[k], _weight(rows.weight, k))
            elif kind == "complete":
                self._complete(seq, user, m_row, None if outputs is None else outputs[k], _weight(rows.weight, k))
            else:
                self._unchanged(seq, kind, user, m_row)

    def _arrive(self, seq: int, user: str, m_row: float) -> None:
        if self.queued.get(user, 0) == 0:
            previous = self.counter.get(user, 0.0)
            lowest = self._smallest()  # user is not backlogged: this is another user
            expected = lowest[0] if lowest is not None and lowest[0] > previous else previous
            if m_row != expected:
                self.findings.add("§9 join", seq, f"{user} joined with counter {m_row!r}; max(C_i, min C_j) gives {expected!r}")
            heapq.heappush(self.heap, (m_row, user))
        elif m_row != self.counter.get(user):
            self.findings.add("§9 join", seq, f"{user} was already queued but its counter moved to {m_row!r}")
        self.queued[user] = self.queued.get(user, 0) + 1
        self.counter[user] = m_row

    def _dispatch(self, seq: int, user: str, m_row: float, cost: float | None, weight: float) -> None:
        add, counter = self.findings.add, self.counter
        if cost is None or not cost >= 0:
            add("§9 charge", seq, f"dispatch with cost {cost!r}; the input charge must be >= 0")
            return
        top = self._smallest()
        if self.queued.get(user, 0) == 0:
            add("§9 pick", seq, f"{user} was dispatched with nothing queued")
        elif top is not None and top != (counter[user], user):
            add("§9 pick", seq, f"picked {user} at counter {counter[user]!r}; the smallest (C_i, id) was {top[1]} at {top[0]!r}")
        expected = counter.get(user, 0.0) + cost / weight
        if m_row != expected:
            add("§9 charge", seq, f"{user}'s counter became {m_row!r}; C_i + cost/w = {expected!r}")
        left = self.queued[user] = self.queued.get(user, 0) - 1
        counter[user] = m_row
        if left > 0:
            heapq.heappush(self.heap, (m_row, user))

    def _complete(self, seq: int, user: str, m_row: float, output_tokens: int | None, weight: float) -> None:
        previous = self.counter.get(user, 0.0)
        if output_tokens is None:
            if m_row < previous:
                self.findings.add("§9 charge", seq, f"{user}'s counter went down from {previous!r} to {m_row!r} at a completion")
        else:
            expected = previous + self.output_weight * output_tokens / weight
            if m_row != expected:
                self.findings.add("§9 charge", seq, f"{user}'s counter became {m_row!r} at a completion; "
                                                     f"C_i + b * output_tokens / w = {expected!r}")
        self.counter[user] = m_row
        if self.queued.get(user, 0):
            heapq.heappush(self.heap, (m_row, user))

    def _unchanged(self, seq: int, kind: str, user: str, m_row: float) -> None:
        if m_row != self.counter.get(user):
            self.findings.add("§9", seq, f"a {kind} changed {user}'s counter to {m_row!r}; only joins and charges move counters")
        if kind == "cancel":
            self.queued[user] = self.queued.get(user, 0) - 1
