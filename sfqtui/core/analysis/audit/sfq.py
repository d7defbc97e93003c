"""SFQ's rules (semantics §3, the article's §3.1-§3.3), re-derived from the log itself.

Every join, pick, charge and idle reset is re-derived from the log (so tampered meters
or v are caught); the band invariant of §3.1 is checked; and W_i - W_j is bounded by
2 c_max over every interval in which j stays backlogged (§3.2 for two backlogged users,
§3.3 for any i against a backlogged j).

The bound is checked through y_i = C_i - v (C_i: i's cumulative charge c/w). For any
interval, W_i - W_j = Δy_i - Δy_j, so if every user's y rises by at most c_max over any
interval and every backlogged user's y drops by at most c_max, the bound holds. Both are
computed in one pass; exact pairs are computed for the worst candidates and wherever
the sufficient test fails.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Protocol

from sfqtui.core.analysis.audit.backlogged import smallest_backlogged, wrong_pick
from sfqtui.core.analysis.audit.report import AuditReport, Checks, Margin, PairGap, RuleSet, Suspension, weight_at
from sfqtui.core.analysis.audit.snapshot import Snapshot
from sfqtui.core.analysis.gaps import DispatchHistory, Episodes, Ranked
from sfqtui.core.events import ENGINE_KINDS
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import amount, count, distinct, exact

ROUNDING = 1e-9  # relative: see SFQRules._rounding
TOP_CANDIDATES = 5


@dataclass
class _Backlog:
    """An SFQ user's backlog episode while it lasts: y's running max and largest drop so far."""

    start: int
    start_seq: int
    run_max: float
    drop: float = 0.0


class Published(Protocol):
    """What one replica was to raise its meters to under share sync (semantics §11)."""

    def target(self, t: float, user: str) -> float | None:
        """The meter published for ``user`` plus this replica's charges since, applied at
        time t (None: no exchange applied a meter of ``user`` at t)."""


class SFQRules(RuleSet):
    """§3 (or its reset-join variant): joins, picks, charges and idle resets re-derived;
    the band invariant of §3.1; the 2 c_max bound of §3.2/§3.3.

    With ``published`` (one replica of a replay under share sync), ``sync`` rows are
    re-derived too, and the upper band and the 2 c_max bound, which sync does not promise
    (docs/semantics.md), are not checked.

    From a ``snapshot`` (a recording that joined late), the meters, v and backlogs start as
    the snapshot says. ``merge`` rows (a group's replica back after the store was away,
    docs/semantics.md §12) are re-derived, and no 2 c_max interval spans one: the bound was
    suspended until then."""

    def __init__(self, reset_join: bool, published: Published | None = None, snapshot: Snapshot | None = None) -> None:
        super().__init__()
        self.reset_join = reset_join
        self.published = published
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
        self.suspensions: list[Suspension] = []
        if snapshot is not None:
            self._start_at(snapshot)

    def _start_at(self, snapshot: Snapshot) -> None:
        self.v = snapshot.v
        for user, held in snapshot.users.items():
            self.meter[user] = held.meter
            self.max_meter = max(self.max_meter, held.meter)
            if held.queued > 0:
                self.queued[user] = held.queued
                heapq.heappush(self.heap, (held.meter, user))
                self.backlogs[user] = _Backlog(0, snapshot.seq, run_max=-self.v)
                self.low[user] = -self.v

    def checks(self) -> Checks:
        join = "S_i <- v" if self.reset_join else "S_i <- max(S_i, v)"
        own: Checks = [(("§3", "§3 join", "§3 pick", "§3 charge", "§3 idle reset"),
                f"§3 join {join}, pick argmin (S_i, id), charge S_i + c/w, idle reset v <- max(v, max S_i)")]
        if self.suspensions:
            own.append((("§12 merge",), "§12 merge rows raise a meter (v for a new user) by the replica's own charges, v unchanged; "
                        "no 2 c_max interval spans a merge"))
        if self.published is not None:
            return [
                (("§3.1 (1)",), "§3.1 (1) v never decreases"),
                (("§3.1 (3)",), "§3.1 (3) every backlogged user's meter >= v"),
                *own,
                (("§11 sync",), "§11 sync rows raise a meter to the published one plus this replica's charges since; v unchanged"),
            ]
        return [
            (("§3.1 (1)",), "§3.1 (1) v never decreases"),
            (("§3.1 (2)",), "§3.1 (2) every meter <= v + c_max"),
            (("§3.1 (3)",), "§3.1 (3) every backlogged user's meter >= v"),
            *own,
            (("§3.2/§3.3",), "§3.2/§3.3 W_i - W_j <= 2 c_max while j stays backlogged"),
        ]

    def _backlogged_min(self) -> tuple[float, str] | None:
        return smallest_backlogged(self.heap, self.queued, self.meter)

    def _feed(self, rows: LogRows, first: int) -> None:
        add = self.findings.add
        for k, (seq, kind, user, v_row, m_row) in enumerate(zip(rows.seq, rows.kind, rows.user, rows.v, rows.meter)):
            if kind in ENGINE_KINDS:  # the engine's doings: no reading of the scheduler's state
                continue
            if v_row is None:
                add("§3.1 (1)", seq, f"{kind} row has no v")
                continue
            if v_row < self.v:
                shown = distinct(self.v, v_row)
                add("§3.1 (1)", seq, f"v decreased from {shown[0]} to {shown[1]}")
            if kind == "idle_reset":
                self._idle_reset(seq, v_row)
            elif user is None or m_row is None:
                if kind in ("arrive", "dispatch", "complete", "cancel"):
                    add("structure", seq, f"{kind} row without user or meter")
            elif kind == "arrive":
                self._arrive(first + k, seq, user, v_row, m_row)
            elif kind == "dispatch":
                self._dispatch(first + k, seq, user, v_row, m_row, rows.cost[k], weight_at(rows.weight, k))
            elif kind == "sync":
                self._sync(seq, rows.t[k], user, v_row, m_row)
            elif kind == "merge":
                since = rows.since_seq[k] if rows.since_seq is not None else None
                replica = rows.replica[k] if rows.replica is not None else None
                self._merge(first + k, seq, user, v_row, m_row, rows.cost[k], Suspension(since, seq, replica))
            else:
                self._other(first + k, seq, kind, user, v_row, m_row)

    def _idle_reset(self, seq: int, v_row: float) -> None:
        expected = max(self.v, self.max_meter)
        if self._backlogged_min() is not None:
            self.findings.add("§3 idle reset", seq, "idle_reset while users are still backlogged")
        if v_row != expected:
            shown = distinct(v_row, expected)
            self.findings.add("§3 idle reset", seq, f"idle reset set v = {shown[0]}; max(v, max S_i) is {shown[1]}")
        self.v = v_row

    def _arrive(self, position: int, seq: int, user: str, v_row: float, m_row: float) -> None:
        add = self.findings.add
        if v_row != self.v:
            shown = distinct(self.v, v_row)
            add("§3 join", seq, f"an arrival changed v from {shown[0]} to {shown[1]}")
        v = self.v = v_row
        if self.queued.get(user, 0) == 0:
            previous = self.meter.get(user)
            expected = v if (self.reset_join or previous is None or previous < v) else previous
            if m_row != expected:
                rule = "S_i <- v" if self.reset_join else "max(S_i, v)"
                shown = distinct(m_row, expected)
                add("§3 join", seq, f"{user} joined with meter {shown[0]}; {rule} gives {shown[1]}")
            heapq.heappush(self.heap, (m_row, user))
            y = self.charged.get(user, 0.0) - v
            self.backlogs[user] = _Backlog(position, seq, run_max=y)
            self.low.setdefault(user, y)
        elif m_row != self.meter.get(user):
            shown = distinct(self.meter.get(user), m_row)
            add("§3 join", seq, f"{user} was already queued but its meter moved from {shown[0]} to {shown[1]}")
            heapq.heappush(self.heap, (m_row, user))  # the log's meter from here on: a pick is judged against it
        self.queued[user] = self.queued.get(user, 0) + 1
        self.meter[user] = m_row
        self.max_meter = max(self.max_meter, m_row)

    def _dispatch(self, position: int, seq: int, user: str, v_row: float, m_row: float, cost: float | None, weight: float) -> None:
        add = self.findings.add
        if cost is None or not cost > 0:
            add("§3 charge", seq, f"dispatch with cost {exact(cost)}; every cost must be > 0")
            return
        charge = cost / weight
        c_max = self.c_max = max(self.c_max, charge)
        meter = self.meter
        top = self._backlogged_min()
        if self.queued.get(user, 0) == 0:
            add("§3 pick", seq, f"{user} was dispatched with nothing queued")
        elif top is not None and top != (meter[user], user):
            add("§3 pick", seq, wrong_pick(user, meter[user], top, "meter", "S_i"))
        if v_row != meter.get(user):
            shown = distinct(v_row, meter.get(user))
            add("§3 pick", seq, f"the pick set v = {shown[0]}; {user}'s meter was {shown[1]}")
        expected = v_row + charge
        if m_row != expected:
            shown = distinct(m_row, expected)
            add("§3 charge", seq, f"{user}'s meter became {shown[0]}; S_i + c/w = {shown[1]}")
        v_before = self.v
        v = self.v = v_row
        left = self.queued[user] = self.queued.get(user, 0) - 1
        meter[user] = m_row
        self.max_meter = max(self.max_meter, m_row)
        if self.published is None:
            self.upper_margin.see(v + c_max - m_row, seq, user, m_row, v)
            if m_row > v + c_max:
                shown = distinct(m_row, v + c_max)
                add("§3.1 (2)", seq, f"{user}'s meter {shown[0]} > v + c_max = {shown[1]}")
        if left > 0:
            heapq.heappush(self.heap, (m_row, user))
        self._charge(position, seq, user, charge, v_before, left)
        smallest = self._backlogged_min()
        if smallest is not None:
            self.lower_margin.see(smallest[0] - v, seq, smallest[1], smallest[0], v)
            if smallest[0] < v:
                shown = distinct(smallest[0], v)
                add("§3.1 (3)", seq, f"backlogged {smallest[1]} has meter {shown[0]} < v = {shown[1]}")

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

    def _sync(self, seq: int, t: float, user: str, v_row: float, m_row: float) -> None:
        add = self.findings.add
        if self.published is None:
            add("§11 sync", seq, "a sync row in a log whose replicas share nothing")
            return
        if v_row != self.v:
            shown = distinct(self.v, v_row)
            add("§11 sync", seq, f"a sync row changed v from {shown[0]} to {shown[1]}")
        target = self.published.target(t, user)
        previous = self.meter.get(user)
        if target is None or previous is None:
            add("§11 sync", seq, f"a sync row moved {user}'s meter to {exact(m_row)}; no exchange applies a meter of {user} here at t {exact(t)}")
        elif not target > previous:
            shown = distinct(previous, target)
            add("§11 sync", seq, f"a sync row moved {user}'s meter to {amount(m_row)}; it was {shown[0]}, at or above the target {shown[1]}")
        elif m_row != target:
            shown = distinct(m_row, target)
            add("§11 sync", seq, f"a sync row set {user}'s meter to {shown[0]}; the published meter plus this replica's charges since is {shown[1]}")
        self.meter[user] = m_row
        self.max_meter = max(self.max_meter, m_row)
        if self.queued.get(user, 0) > 0:
            heapq.heappush(self.heap, (m_row, user))  # the entry before it is stale and skipped

    def _merge(self, position: int, seq: int, user: str, v_row: float, m_row: float, charge: float | None, suspension: Suspension) -> None:
        """A replica back in its group raised ``user``'s meter by what it charged on its own:
        the store's meter (v for a user it has none of) plus those charges."""
        add = self.findings.add
        if v_row != self.v:
            shown = distinct(self.v, v_row)
            add("§12 merge", seq, f"a merge changed v from {shown[0]} to {shown[1]}")
        base = self.meter.get(user, self.v)
        if charge is None or not charge > 0:
            add("§12 merge", seq, f"a merge raised {user}'s meter by {exact(charge)}; what a replica charged on its own is > 0")
        elif m_row != base + charge:
            shown = distinct(m_row, base + charge)
            add("§12 merge", seq, f"a merge set {user}'s meter to {shown[0]}; {amount(base)} plus the replica's own charges "
                f"{amount(charge)} is {shown[1]}")
        self.meter[user] = m_row
        self.max_meter = max(self.max_meter, m_row)
        if self.queued.get(user, 0) > 0:
            heapq.heappush(self.heap, (m_row, user))  # the entry before it is stale and skipped
        last = self.suspensions[-1] if self.suspensions else None
        if last is None or (last.since_seq, last.replica) != (suspension.since_seq, suspension.replica) or last.last_seq != seq - 1:
            self.suspensions.append(suspension)
        else:
            last.last_seq = seq
        # The log misses the replica's own dispatches: an interval across the merge is not bounded.
        for backlogged in list(self.backlogs):
            self._close(backlogged, position)
            self.backlogs[backlogged] = _Backlog(position, seq, run_max=self.charged.get(backlogged, 0.0) - self.v)

    def _other(self, position: int, seq: int, kind: str, user: str, v_row: float, m_row: float) -> None:
        if v_row != self.v:
            shown = distinct(self.v, v_row)
            self.findings.add("§3", seq, f"a {kind} changed v from {shown[0]} to {shown[1]}")
        if m_row != self.meter.get(user):
            shown = distinct(self.meter.get(user), m_row)
            self.findings.add("§3", seq, f"a {kind} changed {user}'s meter from {shown[0]} to {shown[1]}; only joins and charges move meters")
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
        report.worst_gap = self._bound() if self.published is None else None
        report.suspensions += self.suspensions

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
                self.findings.add("§3.2/§3.3", gap.end_seq, f"{gap.user} gained {amount(gap.gap)} over backlogged {gap.behind} "
                                  f"between seq {count(gap.start_seq)} and {count(gap.end_seq)}; 2 c_max = {amount(limit)}")
        return worst
