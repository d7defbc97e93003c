"""What an audit finds (violations, margins, the worst gap) and the rule set every concern implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import amount

MAX_LISTED = 20

Checks = list[tuple[tuple[str, ...], str]]


@dataclass(frozen=True)
class Violation:
    rule: str
    seq: int
    message: str


def by_seq(found: Iterable[Violation]) -> list[Violation]:
    """Violations in the order of the events that break them (then by rule)."""
    return sorted(found, key=lambda v: (v.seq, v.rule))


@dataclass(frozen=True)
class PairGap:
    """user gained ``gap`` of charged cost over ``behind`` between two events, while ``behind`` stayed backlogged."""

    user: str
    behind: str
    start_seq: int
    end_seq: int
    gap: float
    replica: int | None = None  # the replica both users were on (share none), if any


@dataclass
class Suspension:
    """A group's replica served on its own from after seq ``since_seq`` (None: not said) until its
    charges were merged, at seqs ``seq`` to ``last_seq``: the global bound did not hold in between."""

    since_seq: int | None
    seq: int
    replica: int | None
    last_seq: int = -1

    def __post_init__(self) -> None:
        self.last_seq = max(self.last_seq, self.seq)


@dataclass
class Margin:
    """The closest a rule came to breaking: the smallest slack and where."""

    slack: float = float("inf")
    seq: int = -1
    detail: str = ""

    def see(self, slack: float, seq: int, user: str, meter: float, v: float) -> None:
        if slack < self.slack:
            self.slack, self.seq, self.detail = slack, seq, f"{user} meter {amount(meter)}, v {amount(v)}"


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
    snapshot_seq: int | None = None  # the log was audited from a snapshot of the state at this seq
    suspensions: list[Suspension] = field(default_factory=list)

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


def weight_at(weights: Sequence[float | None] | None, k: int) -> float:
    if weights is None:
        return 1.0
    w = weights[k]
    return 1.0 if w is None else w
