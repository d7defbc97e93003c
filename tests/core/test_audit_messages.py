"""What `check` says of a violation reads as one: the comparison that failed, its figures to
the decimals that tell them apart (not every digit of a double), ids when the meters tie."""

from __future__ import annotations

from sfqtui.core.analysis.audit import audit
from sfqtui.core.log.rows import LogRows

C = 13_842.148955224897


def sfq_log(*rows: tuple[str, str, str, float | None, float, float]) -> LogRows:
    """Rows of (kind, user, request id, cost, v, meter), one per second."""
    n = len(rows)
    return LogRows("sfq", seq=list(range(n)), t=[float(k) for k in range(n)], kind=[r[0] for r in rows], user=[r[1] for r in rows],
                   request_id=[r[2] for r in rows], cost=[r[3] for r in rows], v=[r[4] for r in rows], meter=[r[5] for r in rows],
                   deficit=[None] * n)


def violations(log: LogRows) -> list[tuple[str, str]]:
    return [(v.rule, v.message) for v in audit(log).violations]


def test_a_pick_of_the_larger_meter_says_which_was_smaller() -> None:
    log = sfq_log(("arrive", "alice", "a1", None, 0.0, 0.0), ("arrive", "alice", "a2", None, 0.0, 0.0), ("arrive", "bob", "b1", None, 0.0, 0.0),
                  ("dispatch", "alice", "a1", C, 0.0, C), ("dispatch", "alice", "a2", C, C, 2 * C))
    assert ("§3 pick", "picked alice at meter 13,842; backlogged bob had the smaller meter 0, and the pick takes the smallest (S_i, id)") \
        in violations(log)


def test_a_pick_on_a_tie_names_the_smaller_id() -> None:
    log = sfq_log(("arrive", "alice", "a1", None, 0.0, 0.0), ("arrive", "bob", "b1", None, 0.0, 0.0), ("dispatch", "bob", "b1", 5.0, 0.0, 5.0))
    assert violations(log) == [("§3 pick", "picked bob at meter 0; backlogged alice had the same meter and the smaller id (alice < bob), "
                                           "and the pick takes the smallest (S_i, id)")]


def test_a_charge_off_by_a_little_shows_the_decimals_that_differ() -> None:
    log = sfq_log(("arrive", "alice", "a1", None, 0.0, 0.0), ("dispatch", "alice", "a1", C, 0.0, C + 0.001))
    assert ("§3 charge", "alice's meter became 13,842.15; S_i + c/w = 13,842.149") in violations(log)


def test_a_meter_moved_while_queued_is_the_finding_and_the_next_pick_is_judged_on_the_logs_meter() -> None:
    """A queued user's meter moved by an arrival: that is the violation; the pick after it,
    of the user whose meter is now the smallest, is not one (it used to read "picked alice at
    meter 17,815.78; the smallest (S_i, id) was bob at 17,914.70")."""
    log = sfq_log(("arrive", "alice", "a1", None, 0.0, 0.0), ("arrive", "bob", "b1", None, 0.0, 0.0), ("arrive", "bob", "b2", None, 0.0, 0.0),
                  ("dispatch", "alice", "a1", 18_000.0, 0.0, 18_000.0), ("dispatch", "bob", "b1", 17_914.7, 0.0, 17_914.7),
                  ("arrive", "alice", "a2", None, 0.0, 18_000.0), ("arrive", "alice", "a3", None, 0.0, 17_815.78),
                  ("dispatch", "alice", "a2", 100.0, 17_815.78, 17_915.78))
    assert violations(log) == [("§3 join", "alice was already queued but its meter moved from 18,000 to 17,816")]
