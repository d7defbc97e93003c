"""The rules every log obeys, whatever its scheduler: seq, time, and each request's life."""

from __future__ import annotations

from collections.abc import Hashable

from sfqtui.core.analysis.audit.report import Checks, RuleSet
from sfqtui.core.analysis.audit.snapshot import Snapshot
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import count, distinct


class StructureRules(RuleSet):
    """Every scheduler: seq counts up from 0, time never goes back, each request arrives, is dispatched, completes
    (and starts running in its engine in between, when the log says).

    From a ``snapshot`` at seq N, seq counts up from N (the log's first row, a gap, stands
    for what came before), and a request first seen at its dispatch or cancel (its
    completion) is one the snapshot counted as queued (in flight) for its user."""

    # kind -> (the stage a request must be in, the stage it moves to; None: its life is over)
    LIFE: dict[str, tuple[str, str | None]] = {
        "arrive": ("", "arrive"), "dispatch": ("arrive", "dispatch"), "complete": ("dispatch", None), "cancel": ("arrive", None),
        "start": ("dispatch", "dispatch"),
    }

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        super().__init__()
        self.first_seq = 0 if snapshot is None else snapshot.seq
        users = {} if snapshot is None else snapshot.users
        # Requests the snapshot counted, per user, that the log has not named yet.
        self.held = {"arrive": {u: s.queued for u, s in users.items()}, "dispatch": {u: s.inflight for u, s in users.items()}}
        self.stage: dict[Hashable, str] = {}  # requests arrived or dispatched, not yet finished
        self.last_t = float("-inf")
        self.users: set[str | None] = set()
        self.dispatches = 0

    def checks(self) -> Checks:
        start = "0, 1, 2, ..." if not self.first_seq else f"on from the snapshot's {count(self.first_seq)}"
        return [(("structure",), f"seq counts {start}; t never decreases; arrive -> dispatch -> complete per request")]

    def _feed(self, rows: LogRows, first: int) -> None:
        add, stage, life = self.findings.add, self.stage, self.LIFE
        last_t = self.last_t
        start = self.first_seq
        for k, (seq, t, kind, rid, user) in enumerate(zip(rows.seq, rows.t, rows.kind, rows.request_id, rows.user), first):
            if seq != start + k:
                add("structure", seq, f"seq {count(seq)} at row {count(k)}: seq must count "
                    + ("0, 1, 2, ..." if not start else f"{count(start)}, {count(start + 1)}, ... from the snapshot"))
            if t < last_t:
                shown = distinct(last_t, t)
                add("structure", seq, f"t went back from {shown[0]} to {shown[1]}")
            last_t = max(last_t, t)
            if kind in life and rid is not None:
                expected, now = life[kind]
                if stage.get(rid, "") != expected and not self._held(rid, expected, user):
                    add("structure", seq, f"request {rid}: {kind} after {stage.get(rid) or 'nothing'}")
                if now is None:
                    stage.pop(rid, None)
                else:
                    stage[rid] = now
        self.last_t = last_t
        self.users.update(rows.user)
        self.dispatches += sum(1 for kind in rows.kind if kind == "dispatch")

    def _held(self, rid: Hashable, expected: str, user: str | None) -> bool:
        """A request first seen after the snapshot, in a stage the snapshot counted for its user (one fewer left)."""
        held = self.held.get(expected)
        if rid in self.stage or held is None or user is None or held.get(user, 0) <= 0:
            return False
        held[user] -= 1
        return True
