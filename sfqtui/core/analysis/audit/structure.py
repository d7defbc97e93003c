"""The rules every log obeys, whatever its scheduler: seq, time, and each request's life."""

from __future__ import annotations

from collections.abc import Hashable

from sfqtui.core.analysis.audit.report import Checks, RuleSet
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import count, distinct


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
                add("structure", seq, f"seq {count(seq)} at row {count(k)}: seq must count 0, 1, 2, ...")
            if t < last_t:
                shown = distinct(last_t, t)
                add("structure", seq, f"t went back from {shown[0]} to {shown[1]}")
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
