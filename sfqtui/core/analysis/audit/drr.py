"""DRR's rules (semantics §4)."""

from __future__ import annotations

from sfqtui.core.analysis.audit.report import Checks, RuleSet
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import distinct, exact


class DRRRules(RuleSet):
    """§4: deficits never negative, and no dispatch costs more than the deficit it was sent against."""

    def checks(self) -> Checks:
        return [(("§4",), "§4 deficits >= 0; no dispatch costs more than the deficit it was sent against")]

    def _feed(self, rows: LogRows, first: int) -> None:
        add, credits = self.findings.add, rows.credit
        for k, (seq, kind, user, deficit, cost) in enumerate(zip(rows.seq, rows.kind, rows.user, rows.deficit, rows.cost)):
            if deficit is not None and deficit < 0:
                add("§4", seq, f"{user}'s deficit {exact(deficit)} < 0")
            if kind == "dispatch" and credits is not None:
                credit = credits[k]
                if credit is not None and cost is not None and cost > credit:
                    shown = distinct(cost, credit)
                    add("§4", seq, f"{user} sent cost {shown[0]} against a deficit of {shown[1]}")
