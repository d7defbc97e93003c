"""VTC's rules (semantics §9): every join, pick and charge re-derived from the log's counters.

The input charge is checked at dispatch, and the output charge at completion from the
complete row's output_tokens.
"""

from __future__ import annotations

import heapq

from sfqtui.core.analysis.audit.backlogged import smallest_backlogged, wrong_pick
from sfqtui.core.analysis.audit.report import Checks, RuleSet, weight_at
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import amount, distinct, exact
from sfqtui.core.pricing.estimator import EstimatorParams

DEFAULT_OUTPUT_WEIGHT = EstimatorParams.output_weight  # b, when a log does not record it (semantics §9)


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
        b = amount(self.output_weight) if self.output_weight_known else f"{amount(self.output_weight)}, the default: the log does not record it"
        completion = f"C_i + b output_tokens/w (b = {b})" if self.outputs_known else "no decrease (no output_tokens in the log)"
        return [
            (("§9", "§9 join", "§9 pick", "§9 charge"),
             f"§9 join C_i <- max(C_i, min C_j of the other backlogged users), pick argmin (C_i, id), charge C_i + cost/w "
             f"at dispatch and {completion} at completion; nothing else moves a counter"),
        ]

    def _smallest(self) -> tuple[float, str] | None:
        return smallest_backlogged(self.heap, self.queued, self.counter)

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
                self._dispatch(seq, user, m_row, rows.cost[k], weight_at(rows.weight, k))
            elif kind == "complete":
                self._complete(seq, user, m_row, None if outputs is None else outputs[k], weight_at(rows.weight, k))
            else:
                self._unchanged(seq, kind, user, m_row)

    def _arrive(self, seq: int, user: str, m_row: float) -> None:
        if self.queued.get(user, 0) == 0:
            previous = self.counter.get(user, 0.0)
            lowest = self._smallest()  # user is not backlogged: this is another user
            expected = lowest[0] if lowest is not None and lowest[0] > previous else previous
            if m_row != expected:
                shown = distinct(m_row, expected)
                self.findings.add("§9 join", seq, f"{user} joined with counter {shown[0]}; max(C_i, min C_j) gives {shown[1]}")
            heapq.heappush(self.heap, (m_row, user))
        elif m_row != self.counter.get(user):
            shown = distinct(self.counter.get(user), m_row)
            self.findings.add("§9 join", seq, f"{user} was already queued but its counter moved from {shown[0]} to {shown[1]}")
            heapq.heappush(self.heap, (m_row, user))  # the log's counter from here on: a pick is judged against it
        self.queued[user] = self.queued.get(user, 0) + 1
        self.counter[user] = m_row

    def _dispatch(self, seq: int, user: str, m_row: float, cost: float | None, weight: float) -> None:
        add, counter = self.findings.add, self.counter
        if cost is None or not cost >= 0:
            add("§9 charge", seq, f"dispatch with cost {exact(cost)}; the input charge must be >= 0")
            return
        top = self._smallest()
        if self.queued.get(user, 0) == 0:
            add("§9 pick", seq, f"{user} was dispatched with nothing queued")
        elif top is not None and top != (counter[user], user):
            add("§9 pick", seq, wrong_pick(user, counter[user], top, "counter", "C_i"))
        expected = counter.get(user, 0.0) + cost / weight
        if m_row != expected:
            shown = distinct(m_row, expected)
            add("§9 charge", seq, f"{user}'s counter became {shown[0]}; C_i + cost/w = {shown[1]}")
        left = self.queued[user] = self.queued.get(user, 0) - 1
        counter[user] = m_row
        if left > 0:
            heapq.heappush(self.heap, (m_row, user))

    def _complete(self, seq: int, user: str, m_row: float, output_tokens: int | None, weight: float) -> None:
        previous = self.counter.get(user, 0.0)
        if output_tokens is None:
            if m_row < previous:
                shown = distinct(previous, m_row)
                self.findings.add("§9 charge", seq, f"{user}'s counter went down from {shown[0]} to {shown[1]} at a completion")
        else:
            expected = previous + self.output_weight * output_tokens / weight
            if m_row != expected:
                shown = distinct(m_row, expected)
                self.findings.add("§9 charge", seq, f"{user}'s counter became {shown[0]} at a completion; C_i + b * output_tokens / w = {shown[1]}")
        self.counter[user] = m_row
        if self.queued.get(user, 0):
            heapq.heappush(self.heap, (m_row, user))

    def _unchanged(self, seq: int, kind: str, user: str, m_row: float) -> None:
        if m_row != self.counter.get(user):
            shown = distinct(self.counter.get(user), m_row)
            self.findings.add("§9", seq, f"a {kind} changed {user}'s counter from {shown[0]} to {shown[1]}; only joins and charges move counters")
        if kind == "cancel":
            self.queued[user] = self.queued.get(user, 0) - 1
