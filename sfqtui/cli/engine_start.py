"""What `check` and `compare` say of fairness at engine start (docs/semantics.md, "Fairness at engine start")."""

from __future__ import annotations

from sfqtui.core.analysis.engine_starts import Passing
from sfqtui.core.analysis.fairness import FairnessReport, Gap
from sfqtui.core.numbers import amount, count, counted, span

NOT_REPORTED = "fairness at engine start: not available (no start rows: the engine did not report when requests started)"


def _gap(gap: Gap | None) -> str:
    return "none (no two users waited at once)" if gap is None else f"{amount(gap.gap)} ({gap.ahead} over {gap.behind}, t {span(gap.start_t, gap.end_t)})"


def _passing(passing: Passing) -> str:
    text = f"starts out of dispatch order: {counted(passing.pairs, 'pair')} of two users' requests"
    if passing.ahead is not None:
        text += f" (most: {passing.ahead} started before earlier requests of {passing.behind}, {count(passing.worst)})"
    return text


def engine_start_lines(report: FairnessReport) -> list[str]:
    """The worst gap at dispatch against the worst gap at engine start, and the starts out of
    order; NOT_REPORTED when the log has no start rows."""
    started = report.at_engine_start
    if started is None:
        return [NOT_REPORTED]
    starts = sum(f.dispatched for f in started.users.values())
    lines = [f"worst |W_i - W_j| at dispatch {_gap(report.worst_gap)}, at engine start {_gap(started.worst_gap)} "
             f"({counted(starts, 'start')})"]
    if report.out_of_dispatch_order is not None:
        lines.append(_passing(report.out_of_dispatch_order))
    return lines
