"""Fairness at engine start over hand-built logs: a user is backlogged until its request starts
running, a start is charged its dispatch's cost, and starts out of dispatch order are counted."""

from __future__ import annotations

from sfqtui.core.analysis.audit import audit
from sfqtui.core.analysis.fairness import fairness
from sfqtui.core.log.rows import LogRows

Event = tuple[float, str, str, str, float | None]  # t, kind, user, request, cost


def log(events: list[Event]) -> LogRows:
    n = len(events)
    return LogRows("fifo", list(range(n)), [e[0] for e in events], [e[1] for e in events], [e[2] for e in events],
                   [e[3] for e in events], [e[4] for e in events], [None] * n, [None] * n, [None] * n)


def sent_at_once(user: str, count: int, t: float) -> list[Event]:
    """``count`` requests of ``user`` arriving at ``t``, each dispatched at once (slots to spare)."""
    return [e for k in range(count) for e in ((t, "arrive", user, f"{user}{k}", None), (t, "dispatch", user, f"{user}{k}", 1.0))]


def one_place_fcfs() -> list[Event]:
    """A sends 4 requests and B one just after; all dispatched at once to an engine that runs one
    at a time, first come first served: B's waits behind all of A's."""
    events = sent_at_once("A", 4, 0.0) + sent_at_once("B", 1, 0.1) + [(0.1, "start", "A", "A0", None)]
    for k in range(1, 4):
        events += [(float(k), "complete", "A", f"A{k - 1}", None), (float(k), "start", "A", f"A{k}", None)]
    return events + [(4.0, "complete", "A", "A3", None), (4.0, "start", "B", "B0", None), (5.0, "complete", "B", "B0", None)]


def test_an_engine_queue_shows_a_gap_that_dispatches_do_not() -> None:
    report = fairness(log(one_place_fcfs()), at_engine_start=True)
    assert report.worst_gap is None  # nobody waited for a dispatch: no two users backlogged together
    started = report.at_engine_start
    assert started is not None and started.worst_gap is not None
    gap = started.worst_gap
    # Both wait from B's arrival; A's four starts come while B waits.
    assert (gap.ahead, gap.behind, gap.gap, gap.start_t, gap.end_t) == ("A", "B", 4.0, 0.1, 3.0)
    assert started.users["B"].wait_quantile(0.5) == 3.9  # arrival to start
    assert started.users["A"].dispatched == 4 and started.users["B"].dispatched == 1
    assert report.out_of_dispatch_order is not None and report.out_of_dispatch_order.pairs == 0  # FCFS keeps the order
    figures = report.as_dict()["at_engine_start"]
    assert isinstance(figures, dict) and figures["congested_starts"] == 4
    assert figures["users"]["B"]["started"] == 1


def test_starts_out_of_dispatch_order_are_counted_per_pair_of_users() -> None:
    """Two engines: A's two requests go to a busy one, B's three later ones to an idle one and start first."""
    events = sent_at_once("A", 2, 0.0) + sent_at_once("B", 3, 0.1)
    events += [(0.2, "start", "B", f"B{k}", None) for k in range(3)]
    events += [(1.0, "start", "A", "A0", None), (1.0, "start", "A", "A1", None)]
    events += [(2.0, "complete", u, f"{u}{k}", None) for u, n in (("A", 2), ("B", 3)) for k in range(n)]
    passing = fairness(log(events), at_engine_start=True).out_of_dispatch_order
    assert passing is not None
    assert (passing.pairs, passing.ahead, passing.behind, passing.worst) == (6, "B", "A", 6)


def test_starts_at_one_instant_count_in_dispatch_order_whatever_order_their_rows_come_in() -> None:
    """An engine admits A's and B's requests in one step; a proxy learns of the two starts in either
    order (a replay writes them in dispatch order): the figures are the same, also across chunks."""
    events = sent_at_once("A", 2, 0.0) + sent_at_once("B", 2, 0.1) + [(0.2, "start", "A", "A0", None)]
    together: list[Event] = [(1.0, "start", "B", "B0", None), (1.0, "start", "A", "A1", None)]
    after: list[Event] = [(2.0, "start", "B", "B1", None)]
    after += [(3.0, "complete", u, f"{u}{k}", None) for u in "AB" for k in range(2)]
    in_order, reversed_ = fairness(log(events + together[::-1] + after), at_engine_start=True), \
        fairness(log(events + together + after), at_engine_start=True)
    chunked = fairness([log(events + together[:1]), log(together[1:] + after)], at_engine_start=True)
    expected = in_order.at_engine_start
    assert expected is not None
    for report in (in_order, reversed_, chunked):
        assert report.at_engine_start is not None and report.out_of_dispatch_order is not None
        assert report.out_of_dispatch_order.pairs == 0  # started together: none passed another
        assert report.at_engine_start.as_dict() == expected.as_dict()
    held = fairness(log(events + together), at_engine_start=True)  # the log ends at the instant: its starts still count
    assert held.at_engine_start is not None and sum(u.dispatched for u in held.at_engine_start.users.values()) == 3


def test_a_request_that_ends_without_a_start_leaves_uncharged() -> None:
    """A failed before its engine started it: it stops waiting, and its cost is not counted as served."""
    events = sent_at_once("A", 2, 0.0) + sent_at_once("B", 1, 0.0)
    events += [(0.5, "complete", "A", "A0", None), (1.0, "start", "B", "B0", None), (2.0, "start", "A", "A1", None)]
    events += [(3.0, "complete", "B", "B0", None), (3.0, "complete", "A", "A1", None)]
    started = fairness(log(events), at_engine_start=True).at_engine_start
    assert started is not None
    assert started.users["A"].dispatched == 1 and started.users["A"].charged == 1.0


def test_without_start_rows_there_are_no_figures_at_engine_start() -> None:
    events = [e for e in one_place_fcfs() if e[1] != "start"]
    assert fairness(log(events), at_engine_start=True).at_engine_start is None
    assert fairness(log(one_place_fcfs())).at_engine_start is None  # not asked for


def test_the_audit_reads_start_rows_as_part_of_a_request_life() -> None:
    assert audit(log(one_place_fcfs())).ok
    early = [(0.0, "arrive", "A", "A0", None), (0.0, "start", "A", "A0", None), (0.0, "dispatch", "A", "A0", 1.0),
             (1.0, "complete", "A", "A0", None)]
    assert [v.message for v in audit(log(early)).violations] == ["request A0: start after arrive", "request A0: dispatch after dispatch"]
