"""`sfqtui check`: verify a log against semantics §3, §4, §9 and the article's §3.1-§3.3.

The log is read once, whole or chunk by chunk, by one rule set per concern: the
structure every log must have (``structure``), then the scheduler's own rules (``sfq``,
``drr``, ``vtc``), picked from the registry. A rule set keeps per-user state, the
requests still queued or running, and what the gap computation needs (per-user
dispatch histories and backlog episodes, in typed arrays), so its memory does not grow
with the events it has read.
"""

from __future__ import annotations

from collections.abc import Iterable

from sfqtui.core.analysis.audit.bands import BandRules, PolicyLog
from sfqtui.core.analysis.audit.drr import DRRRules
from sfqtui.core.analysis.audit.replicated_log import PerReplicaRules, ReplicaColumnRules, Replicas
from sfqtui.core.analysis.audit.report import MAX_LISTED, AuditReport, RuleSet, Violation, by_seq
from sfqtui.core.analysis.audit.sfq import Published, SFQRules
from sfqtui.core.analysis.audit.snapshot import Snapshot
from sfqtui.core.analysis.audit.structure import StructureRules
from sfqtui.core.analysis.audit.vtc import VTCRules
from sfqtui.core.events import ENGINE_KINDS
from sfqtui.core.log.rows import LogRows, chunks_of, without_kinds
from sfqtui.core.schedulers.registry import REGISTRY

NO_POLICY_LOG = PolicyLog()

__all__ = ["AuditReport", "GrowingAudit", "PolicyLog", "Replicas", "Snapshot", "StructureRules", "Violation", "audit", "by_seq"]


def audit(log: LogRows | Iterable[LogRows], output_weight: float | None = None, replicas: Replicas | None = None,
          snapshot: Snapshot | None = None, policy: PolicyLog = NO_POLICY_LOG) -> AuditReport:
    """Audit a log given whole or as consecutive chunks (seq continuing across them; the
    scheduler is the first chunk's). ``output_weight`` is the b the log was made with
    (VTC's completion charge, recorded in the log's metadata; None: not known, the
    default is assumed). ``replicas``: how a replicated replay's log was made (semantics
    §11, recorded in its metadata); None or one replica: one scheduler's log. ``snapshot``:
    the state the log starts from (a recording that joined late); None: the empty state at seq 0.
    ``policy``: what a policy's log records for its audit (semantics §15)."""
    scheduler, chunks = chunks_of(log)
    growing = GrowingAudit(scheduler or "unknown", output_weight, replicas, snapshot, policy)
    for rows in chunks:
        growing.feed(rows)
        del rows  # let this chunk go before the next one is read
    return growing.report()


class GrowingAudit:
    """The audit of a log fed chunk by chunk, also one that is still growing (a live
    stream): the violations found so far can be read at any time. The 2 c_max bound of
    §3.2/§3.3 needs whole backlog episodes, so it is checked by ``report``, at the end."""

    def __init__(self, scheduler: str, output_weight: float | None = None, replicas: Replicas | None = None,
                 snapshot: Snapshot | None = None, policy: PolicyLog = NO_POLICY_LOG) -> None:
        self.scheduler = scheduler
        self.snapshot = snapshot
        self._structure = StructureRules(snapshot)
        self._rule_sets: list[RuleSet] = [self._structure]
        own = _own_rules(scheduler, output_weight, snapshot=snapshot, policy=policy)
        if replicas is not None and replicas.settings.replicated:
            self._rule_sets.append(ReplicaColumnRules(replicas))
            if own is not None and replicas.settings.share.splits_slots:
                own = PerReplicaRules(replicas, lambda published: _own_rules(scheduler, output_weight, published, policy=policy))
        if own is not None:
            self._rule_sets.append(own)

    def feed(self, rows: LogRows) -> None:
        # An engine's rows move no scheduler state: only the structure rules read them.
        self._structure.feed(rows)
        scheduled = without_kinds(rows, ENGINE_KINDS)
        for rule_set in self._rule_sets[1:]:
            rule_set.feed(scheduled)

    def violations_so_far(self) -> list[Violation]:
        """The violations found so far (the first MAX_LISTED of each rule set), by seq."""
        return by_seq(v for rule_set in self._rule_sets for v in rule_set.findings.listed)

    def report(self) -> AuditReport:
        """Finish the audit (once): the whole-log checks, and every finding."""
        structure = self._structure
        report = AuditReport(self.scheduler, structure.rows, len(structure.users - {None}), structure.dispatches)
        report.snapshot_seq = None if self.snapshot is None else self.snapshot.seq
        for rule_set in self._rule_sets:
            rule_set.finish(report)
            report.checks += rule_set.checks()
            report.violation_count += rule_set.findings.count
            report.violations += rule_set.findings.listed
        del report.violations[MAX_LISTED:]
        return report


def _own_rules(scheduler: str, output_weight: float | None, published: Published | None = None,
               snapshot: Snapshot | None = None, policy: PolicyLog = NO_POLICY_LOG) -> RuleSet | None:
    """The scheduler's own rule set, as the registry names it (None: structure only);
    ``published``: what the other replicas published to this one, under share sync;
    ``snapshot``: the state an SFQ log starts from (only a live proxy's, SFQ, has one)."""
    traits = REGISTRY.get(scheduler)
    if traits is None or traits.audit is None:
        return None
    if traits.audit == "sfq":
        return SFQRules(traits.reset_join, published, snapshot)
    if traits.audit == "drr":
        return DRRRules()
    if traits.audit == "bands":
        return BandRules(traits.value_name, traits.higher_first, round_robin=traits.name == "llm-d" and policy.flows_are_users,
                         credits="credit" in traits.extra_columns, credit_bound=policy.credit_bound)
    return VTCRules(output_weight)
