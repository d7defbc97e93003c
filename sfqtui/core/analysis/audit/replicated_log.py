"""A replicated replay's log (semantics §11): the replica column, the router, each
replica's slots, and each replica's own rules on its own rows.

Under share ``none`` and ``sync`` every replica is its own scheduler, so the scheduler's
rule set runs once per replica on that replica's rows (and its findings name the
replica); under ``global`` the log is one scheduler's and its rule set reads the whole
log. Under ``sync`` a ledger rebuilds, from the dispatch rows of every replica, what
each one published, and checks that every replica applied exactly that.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sfqtui.core.analysis.audit.report import AuditReport, Checks, Findings, Margin, RuleSet, weight_at
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import distinct, exact
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.core.replicas.sync import published_meters, window_of

REQUEST_KINDS = ("arrive", "dispatch", "complete", "cancel")


@dataclass(frozen=True)
class Replicas:
    """What the audit needs to know about a replicated log: its settings and its total slots."""

    settings: ReplicaSettings
    slots: int | None = None


class OnReplica(Findings):
    """Findings of one replica's rule set, added to the shared ones with the replica named."""

    def __init__(self, shared: Findings, replica: int) -> None:
        super().__init__()
        self._shared = shared
        self._replica = replica

    def add(self, rule: str, seq: int, message: str) -> None:
        self._shared.add(rule, seq, f"replica {self._replica}: {message}")


class ReplicaColumnRules(RuleSet):
    """Every request row names a replica in 0..K-1 and keeps it for the request's life;
    each arrival went where the router sends it; no replica (or, under global, the pool)
    has more requests in flight than its slots; idle_reset rows name their replica
    (null under global); sync rows only under sync."""

    def __init__(self, replicas: Replicas) -> None:
        super().__init__()
        settings = self.settings = replicas.settings
        self.count = settings.count
        self.held: dict[Hashable, int] = {}  # requests arrived and not finished: their replica
        self.load = [0] * settings.count  # requests queued or in flight per replica
        self.arrivals = 0
        self.split = settings.share.splits_slots
        self.slots = None if replicas.slots is None else (settings.slots(replicas.slots) if self.split else [replicas.slots])
        self.inflight = [0] * (settings.count if self.split else 1)

    def checks(self) -> Checks:
        settings = self.settings
        slots = "" if self.slots is None else (f"; in flight <= its slots {self.slots}" if self.split else f"; in flight <= {self.slots[0]} slots")
        return [(("§11 replicas",), f"§11 {settings.describe()}: each request on one replica, routed by {settings.router}{slots}")]

    def _feed(self, rows: LogRows, first: int) -> None:
        add = self.findings.add
        replicas = rows.replica
        if replicas is None:
            if len(rows):
                add("§11 replicas", rows.seq[0], "a replicated log without the replica column")
            return
        count, held, load, inflight, slots = self.count, self.held, self.load, self.inflight, self.slots
        for seq, kind, rid, user, rep in zip(rows.seq, rows.kind, rows.request_id, rows.user, replicas):
            if kind in REQUEST_KINDS:
                if rep is None or not 0 <= rep < count:
                    add("§11 replicas", seq, f"{kind} of request {rid} names replica {rep}; there are {count} (0..{count - 1})")
                    continue
                if kind == "arrive":
                    self._routed(seq, rid, user, rep)
                    held[rid] = rep
                    load[rep] += 1
                    continue
                was = held.get(rid)
                if was is not None and was != rep:
                    add("§11 replicas", seq, f"request {rid} moved from replica {was} to replica {rep}; a request stays where it was routed")
                pool = rep if self.split else 0
                if kind == "dispatch":
                    inflight[pool] += 1
                    if slots is not None and inflight[pool] > slots[pool]:
                        where = f"replica {rep}" if self.split else "the pool"
                        add("§11 replicas", seq, f"{where} has {inflight[pool]} requests in flight and {slots[pool]} slots")
                else:
                    if kind == "complete":
                        inflight[pool] -= 1
                    if was is not None:
                        del held[rid]
                        load[was] -= 1
            elif kind == "idle_reset":
                if self.split and (rep is None or not 0 <= rep < count):
                    add("§11 replicas", seq, f"an idle_reset names replica {rep}; under share {self.settings.share.mode} "
                                             "it must name the replica whose v moved")
                elif not self.split and rep is not None:
                    add("§11 replicas", seq, f"an idle_reset names replica {rep}; under share global v is the one scheduler's (null)")
            elif kind == "sync":
                if self.settings.share.mode != "sync":
                    add("§11 replicas", seq, f"a sync row under share {self.settings.share}")
                elif rep is None or not 0 <= rep < count or user is None:
                    add("§11 replicas", seq, f"a sync row must name a replica (0..{count - 1}) and a user")

    def _routed(self, seq: int, rid: Hashable, user: str | None, rep: int) -> None:
        """The n-th arrival went where the router sends it (semantics §11). The random
        router needs request ids: a replay audited in memory names requests by index."""
        router, count, n = self.settings.router, self.count, self.arrivals
        self.arrivals += 1
        if router == "hash":
            expected = zlib.crc32(str(user).encode()) % count
        elif router == "random":
            if not isinstance(rid, str):
                return
            expected = zlib.crc32(f"{self.settings.seed}:{rid}".encode()) % count
        elif router == "round-robin":
            expected = n % count
        else:
            expected = min(range(count), key=self.load.__getitem__)
        if rep != expected:
            self.findings.add("§11 replicas", seq, f"request {rid} went to replica {rep}; {router} routing sends it to {expected}")


@dataclass
class _Application:
    """A publication waiting to be applied: the meters published, and once its time has
    come (``opened``), each replica's targets and the sync rows it must write and wrote."""

    apply_at: float
    meters: dict[str, float]
    opened: bool = False
    targets: dict[tuple[int, str], float] = field(default_factory=dict)
    expected: dict[tuple[int, str], float] = field(default_factory=dict)
    seen: set[tuple[int, str]] = field(default_factory=set)


class SyncLedger:
    """What the replicas published and applied under share sync (sfqtui.core.replicas.sync),
    rebuilt from every replica's rows: the charges of each window from the dispatch rows,
    each replica's meters from the meters its rows claim (each replica's own rule set
    checks those claims), the published meters at each n T, the target of every replica
    at n T + D, and that exactly the meters below their target were raised, by sync rows."""

    def __init__(self, settings: ReplicaSettings, findings: Findings) -> None:
        share = settings.share
        assert share.every_s is not None
        self.count, self.every, self.delay = settings.count, share.every_s, share.delay_s
        self.findings = findings
        self.meters: list[dict[str, float]] = [{} for _ in range(self.count)]
        self.window = 1
        self.charges: list[dict[str, float]] = [{} for _ in range(self.count)]
        self.touched: set[str] = set()
        self.pending: _Application | None = None
        self._targets: dict[float, _Application] = {}  # by time, until every replica's rules have read them
        self.last_t = float("-inf")

    def feed(self, rows: LogRows) -> None:
        replicas = rows.replica
        assert replicas is not None
        for k, (seq, t, kind, user, rep, meter) in enumerate(zip(rows.seq, rows.t, rows.kind, rows.user, replicas, rows.meter)):
            self._before(seq, t, kind)
            self.last_t = t
            if rep is None or user is None or not 0 <= rep < self.count:
                continue
            if kind == "dispatch":
                cost = rows.cost[k]
                if cost is not None:
                    charges = self.charges[rep]
                    charges[user] = charges.get(user, 0.0) + cost / weight_at(rows.weight, k)
            elif kind == "sync":
                pending = self.pending
                if pending is not None and pending.opened and pending.apply_at == t:
                    pending.seen.add((rep, user))
            if kind in ("arrive", "dispatch", "sync"):
                self.touched.add(user)
                if meter is not None:
                    self.meters[rep][user] = meter

    def _before(self, seq: int, t: float, kind: str) -> None:
        """The exchanges due before a row of ``kind`` at time t, in the engine's order."""
        while True:
            pending = self.pending
            if pending is not None and pending.apply_at < t:
                self._open(pending)
                self._close(pending, seq)
            elif self.window * self.every <= t:
                self._publish(t)
            else:
                break
        pending = self.pending
        if pending is not None and pending.apply_at == t and kind in ("sync", "dispatch", "idle_reset"):
            self._open(pending)  # the completions and arrivals at t are in
            if kind != "sync":
                self._close(pending, seq)

    def _publish(self, t: float) -> None:
        if not self.touched:
            self.window = window_of(t, self.every)
            return
        self.pending = _Application(self.window * self.every + self.delay, published_meters(sorted(self.touched), self.meters, self.charges))
        self.charges = [{} for _ in range(self.count)]
        self.touched = set()
        self.window += 1

    def _open(self, pending: _Application) -> None:
        if pending.opened:
            return
        pending.opened = True
        self._targets[pending.apply_at] = pending
        for rep in range(self.count):
            since = self.charges[rep]
            for user, meter in pending.meters.items():
                target = meter + since[user] if user in since else meter
                pending.targets[(rep, user)] = target
                current = self.meters[rep].get(user)
                if current is not None and target > current:
                    pending.expected[(rep, user)] = target

    def _close(self, pending: _Application, seq: int) -> None:
        for (rep, user), target in pending.expected.items():
            if (rep, user) not in pending.seen:
                current, raised = distinct(self.meters[rep].get(user), target)
                self.findings.add("§11 sync", seq, f"replica {rep}: no sync row raising {user}'s meter from {current} to {raised} "
                                                   f"at t {exact(pending.apply_at)}")
        self.pending = None

    def target(self, replica: int, t: float, user: str) -> float | None:
        found = self._targets.get(t)
        return None if found is None else found.targets.get((replica, user))

    def forget_closed(self) -> None:
        """Drop the targets of applications already closed (after every replica has read the chunk)."""
        for at in [at for at, application in self._targets.items() if application is not self.pending]:
            del self._targets[at]

    def finish(self) -> None:
        """The log ends: an application due by its last event must be complete (a later one was never due)."""
        pending = self.pending
        if pending is not None and pending.apply_at <= self.last_t:
            self._open(pending)
            self._close(pending, -1)


@dataclass(frozen=True)
class _Published:
    """The ledger as one replica's rule set sees it."""

    ledger: SyncLedger
    replica: int

    def target(self, t: float, user: str) -> float | None:
        return self.ledger.target(self.replica, t, user)


RulesFactory = Callable[["_Published | None"], "RuleSet | None"]


class PerReplicaRules(RuleSet):
    """The scheduler's rule set once per replica, each fed only its replica's rows (share
    none or sync); under sync with the ledger of what the others published."""

    def __init__(self, replicas: Replicas, make_rules: RulesFactory) -> None:
        super().__init__()
        settings = replicas.settings
        self.ledger = SyncLedger(settings, self.findings) if settings.share.mode == "sync" else None
        self.replicas = []
        for k in range(settings.count):
            rules = make_rules(None if self.ledger is None else _Published(self.ledger, k))
            assert rules is not None
            rules.findings = OnReplica(self.findings, k)
            self.replicas.append(rules)

    def checks(self) -> Checks:
        checks = [(rules, f"{line} (on each replica)") for rules, line in self.replicas[0].checks()]
        if self.ledger is not None:
            checks.append((("§11 sync",), "§11 at every n T + D each replica raised exactly the meters below what was published at n T "
                                          "(plus its charges since), once"))
        return checks

    def _feed(self, rows: LogRows, first: int) -> None:
        replicas = rows.replica
        if replicas is None:
            return  # ReplicaColumnRules says so
        if self.ledger is not None:
            self.ledger.feed(rows)
        positions: list[list[int]] = [[] for _ in self.replicas]
        for k, rep in enumerate(replicas):
            if rep is not None and 0 <= rep < len(positions):
                positions[rep].append(k)
        for rules, mine in zip(self.replicas, positions):
            if mine:
                rules.feed(_subset(rows, mine))
        if self.ledger is not None:
            self.ledger.forget_closed()

    def finish(self, report: AuditReport) -> None:
        if self.ledger is not None:
            self.ledger.finish()
        for k, rules in enumerate(self.replicas):
            own = AuditReport(report.scheduler, 0, 0, 0)
            rules.finish(own)
            report.c_max = max(report.c_max, own.c_max)
            for name in ("upper_margin", "lower_margin"):
                margin: Margin = getattr(own, name)
                if margin.seq >= 0 and margin.slack < getattr(report, name).slack:
                    setattr(report, name, replace(margin, detail=f"replica {k}: {margin.detail}"))
            gap = own.worst_gap
            if gap is not None and (report.worst_gap is None or gap.gap > report.worst_gap.gap):
                report.worst_gap = replace(gap, replica=k)


def _subset(rows: LogRows, positions: list[int]) -> LogRows:
    """The rows at ``positions`` (seq kept), every column that the log has."""

    def pick(column: Sequence[Any]) -> list[Any]:
        return [column[k] for k in positions]

    def maybe(column: Sequence[Any] | None) -> list[Any] | None:
        return None if column is None else pick(column)

    return LogRows(rows.scheduler, pick(rows.seq), pick(rows.t), pick(rows.kind), pick(rows.user), pick(rows.request_id),
                   pick(rows.cost), pick(rows.v), pick(rows.meter), pick(rows.deficit), weight=maybe(rows.weight),
                   credit=maybe(rows.credit), output_tokens=maybe(rows.output_tokens), replica=maybe(rows.replica))
