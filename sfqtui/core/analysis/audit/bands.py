"""The rules of the priority policies of semantics §15 (llm-d, dynamo, litellm), from the log's meters.

Their rows' meter is the user's most important level still queued (llm-d's band, Dynamo's
tier, LiteLLM's priority; null when it has nothing queued), so the log says at each dispatch
which levels were waiting:

- levels strict: the dispatched user held a request at the most important level waiting;
- llm-d, when flows are users: no flow skipped in its turn: while a user waits in a band, no
  other user is served twice in that band (round-robin gives each waiting flow one turn);
- dynamo: a class's deficit is bounded: every request was sent against a class credit of at
  least 1 (its cost, max(1, tokens)) and, when the log records it, below the largest class
  quantum plus the largest cost.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sfqtui.core.analysis.audit.report import Checks, RuleSet
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import count


@dataclass(frozen=True)
class PolicyLog:
    """What a policy's log records of how it was made, for its audit: whether llm-d's flows
    are known to be its users (a replay of a trace without a flow column; a proxy's flows come
    from headers the log does not keep), and the most a Dynamo class can hold (its largest
    quantum plus the largest request cost, in tokens; None: not recorded)."""

    flows_are_users: bool = False
    credit_bound: float | None = None

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> PolicyLog:
        """A saved log's: a replay's log names its trace and the policy columns the trace had."""
        bound = metadata.get("credit_bound")
        flows_are_users = "trace" in metadata and "flow" not in metadata.get("policy_columns", ())
        return cls(flows_are_users, float(bound) if isinstance(bound, (int, float)) else None)


class BandRules(RuleSet):
    """``higher_first``: the higher level is served first (llm-d, dynamo), else the lower
    (LiteLLM); ``word``: what a level is called; ``round_robin``: check llm-d's turns;
    ``credits``: check Dynamo's credits."""

    def __init__(self, word: str, higher_first: bool, round_robin: bool = False, credits: bool = False,
                 credit_bound: float | None = None) -> None:
        super().__init__()
        self.word, self.higher_first, self.round_robin, self.credits = word, higher_first, round_robin, credits
        self.credit_bound = credit_bound
        self.words = word[:-1] + "ies" if word.endswith("y") else word + "s"
        self.level: dict[str, float] = {}  # users with something queued: their most important level
        self.at_level: dict[float, int] = {}  # level -> users whose most important level it is
        self.turns: dict[float, int] = {}  # band -> dispatches in it so far
        self.since: dict[str, int] = {}  # a user waiting in a band: the band's turn count when its wait began
        self.last_turn: dict[tuple[float, str], int] = {}  # (band, user) -> the turn of its last dispatch there
        self.waiting: dict[float, list[tuple[int, str]]] = {}  # band -> heap of (since, user); stale entries skipped

    def checks(self) -> Checks:
        order = "highest" if self.higher_first else "lowest"
        checks: Checks = [((self.words,), f"{self.words} strict: each dispatch serves a user holding the {order} {self.word} waiting")]
        if self.round_robin:
            checks.append((("turns",), "round-robin: while a flow waits in a band, no other flow is served twice in it (flows are users)"))
        if self.credits:
            below = "" if self.credit_bound is None else f" and below the largest quantum plus the largest cost, {self.credit_bound:,.0f}"
            checks.append((("credit",), f"a class's deficit is bounded: each request was sent against a credit of at least 1 token{below}"))
        return checks

    def _feed(self, rows: LogRows, first: int) -> None:
        add = self.findings.add
        credits = rows.credit
        for k, (seq, kind, user, meter) in enumerate(zip(rows.seq, rows.kind, rows.user, rows.meter)):
            if user is None or kind not in ("arrive", "dispatch", "complete", "cancel"):
                continue
            if kind == "dispatch":
                self._dispatched(seq, user)
                credit = None if credits is None else credits[k]
                if self.credits and (credit is None or not credit >= 1):
                    add("credit", seq, f"{user}'s request was sent against a class credit of {credit}, below one token")
                elif self.credits and self.credit_bound is not None and credit is not None and not credit < self.credit_bound:
                    add("credit", seq, f"{user}'s request was sent against a class credit of {credit:,.0f}, "
                                       f"not below the bound {self.credit_bound:,.0f}")
            self._set_level(user, None if meter is None or math.isnan(meter) else meter)

    def _dispatched(self, seq: int, user: str) -> None:
        mine = self.level.get(user)
        if mine is None:
            self.findings.add(self.words, seq, f"{user} was dispatched with nothing queued at any {self.word}")
            return
        levels = [level for level, users in self.at_level.items() if users]
        best = max(levels) if self.higher_first else min(levels)
        if mine != best:
            self.findings.add(self.words, seq, f"{user} was served at {self.word} {mine:,.0f} while {self.word} {best:,.0f} waited")
        if self.round_robin:
            self._turn(seq, user, mine)

    def _turn(self, seq: int, user: str, band: float) -> None:
        turn = self.turns.get(band, 0)
        previous = self.last_turn.get((band, user))
        if previous is not None:
            longest = self._longest_waiting(band, user)
            if longest is not None and longest[0] <= previous:
                self.findings.add("turns", seq, f"{user} was served twice in band {band:,.0f} while {longest[1]} waited there "
                                  f"since its turn {count(longest[0])}")
        self.last_turn[band, user] = turn
        self.turns[band] = turn + 1
        self.since.pop(user, None)  # its wait is over; it begins again below if it still waits in this band

    def _longest_waiting(self, band: float, but: str) -> tuple[int, str] | None:
        """(since, user) of the user other than ``but`` waiting longest in the band, if any."""
        heap = self.waiting.get(band, [])
        held = []
        found = None
        while heap:
            since, other = heap[0]
            if self.level.get(other) != band or self.since.get(other) != since:
                heapq.heappop(heap)  # stale
            elif other == but:
                held.append(heapq.heappop(heap))
            else:
                found = heap[0]
                break
        for entry in held:
            heapq.heappush(heap, entry)
        return found

    def _set_level(self, user: str, level: float | None) -> None:
        old = self.level.get(user)
        if old is not None and old != level:
            self.at_level[old] -= 1
        if level is None:
            self.level.pop(user, None)
            self.since.pop(user, None)
            return
        if old != level:
            self.at_level[level] = self.at_level.get(level, 0) + 1
            self.level[user] = level
            self.since.pop(user, None)
        if self.round_robin and user not in self.since:
            since = self.since[user] = self.turns.get(level, 0)
            heapq.heappush(self.waiting.setdefault(level, []), (since, user))
