"""Share sync:T[,D] (semantics §11, docs/semantics.md): what is published and applied, by
hand on a small case, and against the audit on any trace."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from sfqtui.core.analysis.audit import Replicas, audit
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.core.requests.trace import Trace


def trace(rows: list[tuple[str, float, float]], service: float = 0.5) -> Trace:
    """(user, arrival, cost) in arrival order."""
    return Trace(request_id=[f"q{k}" for k in range(len(rows))], user=[r[0] for r in rows], arrival_s=[r[1] for r in rows],
                 cost=[r[2] for r in rows], service_s=[service] * len(rows))


def replayed(requests: Trace, slots: int, settings: ReplicaSettings) -> LogRows:
    return rows_from_replay(Replay(requests, ReplayConfig("sfq", slots, replicas=settings)).run_all(), requests, "sfq")


def rows_of(log: LogRows, kind: str) -> list[tuple]:
    assert log.replica is not None
    return [(log.t[k], log.replica[k], log.user[k], log.v[k], log.meter[k]) for k in range(len(log)) if log.kind[k] == kind]


def test_two_replicas_publish_and_apply_by_hand() -> None:
    """One slot per replica, round-robin, sync every second, applied at once.

    t 0: A, A, B, B arrive (replicas 0, 1, 0, 1); each replica sends A (tie, by id; S_A 3),
    then at 0.5 B (S_B 1) and resets v to 3. At P_1 = 1 each replica's view of A is its 3
    plus the other's 3, so A is published at 6, B at 2; both replicas raise A and B.
    t 1.2: A arrives on 0 (joins at 6, sent, S_A 9, v 9), B on 1 (joins at v = 3, sent, S_B 4;
    idle reset v 6). At P_2: A's views are 9 + 0 and 6 + 3, B's 2 + 1 and 4 + 0: A at 9, B
    at 4; replica 0 raises B to 4, replica 1 raises A to 9, at t 2 (seen at the arrival at 2.5).
    t 2.5: A on 0 (S_A 12); at P_3 = 3, after the completion at 3, replica 1 raises A to 12.
    """
    log = replayed(trace([("A", 0, 3), ("A", 0, 3), ("B", 0, 1), ("B", 0, 1), ("A", 1.2, 3), ("B", 1.2, 1), ("A", 2.5, 3)]),
                   2, ReplicaSettings(2, "round-robin", Share.parse("sync:1")))
    assert rows_of(log, "sync") == [
        (1.0, 0, "A", 3.0, 6.0), (1.0, 0, "B", 3.0, 2.0), (1.0, 1, "A", 3.0, 6.0), (1.0, 1, "B", 3.0, 2.0),
        (2.0, 0, "B", 9.0, 4.0), (2.0, 1, "A", 6.0, 9.0), (3.0, 1, "A", 6.0, 12.0),
    ]
    dispatches = rows_of(log, "dispatch")
    assert dispatches[4:6] == [(1.2, 0, "A", 6.0, 9.0), (1.2, 1, "B", 3.0, 4.0)]
    assert dispatches[6] == (2.5, 0, "A", 9.0, 12.0)
    first_sync = next(k for k in range(len(log)) if log.kind[k] == "sync")
    assert [log.kind[k] for k in range(first_sync - 2, first_sync)] == ["complete", "complete"]  # after the events at t 1


def test_a_delay_applies_the_charges_made_meanwhile() -> None:
    """sync:1,0.5: published at 1, applied at 1.5; replica 0 charged A again at 1.2, so its target is 6 + 3."""
    log = replayed(trace([("A", 0, 3), ("A", 0, 3), ("B", 0, 1), ("B", 0, 1), ("A", 1.2, 3), ("B", 1.2, 1), ("A", 2.5, 3)]),
                   2, ReplicaSettings(2, "round-robin", Share.parse("sync:1,0.5")))
    first = [row for row in rows_of(log, "sync") if row[0] == 1.5]
    # replica 0: A was sent at 1.2 from 3 to 6 (joined at its 3, v 3): target 6 + 3 = 9 > 6; B 1 -> 2.
    # replica 1: A 3 -> 6; B was sent at 1.2 (joined at v 3, S_B 4): target 2 + 1 = 3 < 4, not raised.
    assert first == [(1.5, 0, "A", 6.0, 9.0), (1.5, 0, "B", 6.0, 2.0), (1.5, 1, "A", 4.0, 6.0)]


def test_hash_routing_leaves_sync_nothing_to_do() -> None:
    """Every user on one replica: no replica ever has a meter another one raised."""
    requests = trace([(u, t * 0.25, 1 + (t % 3)) for t in range(80) for u in "ABCDE"[t % 5]])
    none = replayed(requests, 4, ReplicaSettings(2, "hash", Share("none")))
    synced = replayed(requests, 4, ReplicaSettings(2, "hash", Share.parse("sync:1")))
    assert not rows_of(synced, "sync")
    assert rows_of(synced, "dispatch") == rows_of(none, "dispatch")


drawn_requests = st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(0, 40), st.integers(1, 6)), min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(drawn_requests, st.integers(2, 3), st.integers(0, 3), st.sampled_from([0.5, 1.0, 2.5]), st.sampled_from([0.0, 0.25, 0.4]),
       st.sampled_from(["random", "round-robin", "least-loaded"]), st.booleans())
def test_the_audit_rebuilds_every_sync(drawn: list, count: int, extra: int, every: float, delay_part: float, router: str,
                                       reset: bool) -> None:
    drawn = sorted(drawn, key=lambda r: r[1])
    requests = trace([(u, t / 4, float(c)) for u, t, c in drawn], service=0.75)
    share = Share("sync", every, delay_part * every)
    settings_ = ReplicaSettings(count, router, share, seed=1)
    scheduler = "sfq-reset" if reset else "sfq"
    log = rows_from_replay(Replay(requests, ReplayConfig(scheduler, count + extra, replicas=settings_)).run_all(), requests, scheduler)
    report = audit(log, replicas=Replicas(settings_, count + extra))
    assert report.ok, report.violations[:3]
    syncs = [k for k in range(len(log)) if log.kind[k] == "sync"]
    if syncs:
        k = syncs[len(syncs) // 2]
        meters = list(log.meter)
        lowered = meters[k]
        assert lowered is not None
        meters[k] = lowered - 0.5
        tampered = replace(log, meter=meters)
        assert not audit(tampered, replicas=Replicas(settings_, count + extra)).ok


def test_an_exchange_between_two_arrivals_is_logged_between_them_while_every_slot_is_busy() -> None:
    """Both slots are busy until t 10, so the loop takes arrivals without a dispatch pass of
    their own; the exchange at 1 must still come between the arrivals at 0.5 and 1.5."""
    log = replayed(trace([("A", 0, 3), ("B", 0, 1), ("B", 0, 1), ("A", 0, 3), ("A", 0.5, 3), ("B", 1.5, 1), ("A", 2.5, 3)], service=10),
                   2, ReplicaSettings(2, "round-robin", Share.parse("sync:1")))
    assert 1.0 in {t for t, *_ in rows_of(log, "sync")}
    assert list(log.t) == sorted(log.t)
