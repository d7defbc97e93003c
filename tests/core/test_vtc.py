"""VTC on a trace small enough to follow by hand (the worked example of docs/semantics.md)."""

from sfqtui.core.requests.trace import Trace
from tests.helpers import replay

# (request, user, arrival_s, input_tokens, max_tokens, output_tokens); every request holds the one slot for 1 s
ROWS = [
    ("a1", "A", 0.0, 10, 100, 10),
    ("a2", "A", 0.0, 10, 100, 10),
    ("b1", "B", 0.0, 10, 20, 20),
    ("b2", "B", 0.0, 10, 20, 20),
    ("b3", "B", 0.0, 10, 20, 20),
    ("c1", "C", 2.5, 10, 10, 10),
]


def hand_trace() -> Trace:
    """SFQ's estimate is the cost column, input + 2 x max_tokens; VTC ignores it (a = 1, b = 2)."""
    return Trace(
        request_id=[r[0] for r in ROWS],
        user=[r[1] for r in ROWS],
        arrival_s=[r[2] for r in ROWS],
        input_tokens=[r[3] for r in ROWS],
        max_tokens=[r[4] for r in ROWS],
        output_tokens=[r[5] for r in ROWS],
        cost=[float(r[3] + 2 * r[4]) for r in ROWS],
        service_s=[1.0] * len(ROWS),
    )


def test_vtc_order_and_counters_follow_the_hand_computation() -> None:
    """By hand, with C_i after each event (input charged at dispatch, 2 x output at completion):

    t 0    a1, a2 arrive: nobody else waits, C_A = 0; b1, b2, b3: B is lifted to min C_A = 0.
    t 0    tie A = B = 0, A by id: a1, C_A = 0 + 10 = 10
    t 1    a1 completes: C_A = 10 + 2 x 10 = 30;  B (0 < 30): b1, C_B = 10
    t 2    b1 completes: C_B = 10 + 40 = 50;      A (30 < 50): a2, C_A = 40
    t 2.5  c1 arrives: A has nothing queued, so C is lifted to min C_B = 50: C_C = 50
    t 3    a2 completes: C_A = 60;                tie B = C = 50, B by id: b2, C_B = 60
    t 4    b2 completes: C_B = 100;               C (50): c1, C_C = 60
    t 5    c1 completes: C_C = 80;                B: b3, C_B = 110
    t 6    b3 completes: C_B = 150. Nobody waits: no reset, the counters stay.
    """
    trace = hand_trace()
    log = replay(trace, "vtc")
    rows = [(log.t[k], log.kind[k], trace.request_id[code(log.request_id[k])], log.cost[k], log.meter[k]) for k in range(len(log))]
    assert [r for _, kind, r, _, _ in rows if kind == "dispatch"] == ["a1", "b1", "a2", "b2", "c1", "b3"]
    assert [(t, r, cost, meter) for t, kind, r, cost, meter in rows if kind == "dispatch"] == [
        (0.0, "a1", 10.0, 10.0), (1.0, "b1", 10.0, 10.0), (2.0, "a2", 10.0, 40.0),
        (3.0, "b2", 10.0, 60.0), (4.0, "c1", 10.0, 60.0), (5.0, "b3", 10.0, 110.0),
    ]
    assert [(t, r, meter) for t, kind, r, _, meter in rows if kind == "complete"] == [
        (1.0, "a1", 30.0), (2.0, "b1", 50.0), (3.0, "a2", 60.0), (4.0, "b2", 100.0), (5.0, "c1", 80.0), (6.0, "b3", 150.0),
    ]
    assert [(r, meter) for _, kind, r, _, meter in rows if kind == "arrive"] == [
        ("a1", 0.0), ("a2", 0.0), ("b1", 0.0), ("b2", 0.0), ("b3", 0.0), ("c1", 50.0),
    ]
    assert "idle_reset" not in {kind for _, kind, *_ in rows}


def test_sfq_on_the_same_trace_charges_the_estimate_once_and_sends_a2_last() -> None:
    """SFQ charges the cost column at dispatch: A's 210 per request (it asked for 100 output
    tokens, used 10) is never corrected, so a2 waits for all of B's and for C, which joins
    at max(S_C, v) = v = 50: a1 (S_A 210), b1 (v 0, S_B 50), b2 (v 50, S_B 100), c1 (v 50,
    S_C 80), b3 (v 100, S_B 150), a2 (v 210, S_A 420), then the idle reset sets v = 420."""
    trace = hand_trace()
    log = replay(trace, "sfq")
    picks = [(trace.request_id[code(log.request_id[k])], log.v[k], log.meter[k]) for k in range(len(log)) if log.kind[k] == "dispatch"]
    assert picks == [("a1", 0.0, 210.0), ("b1", 0.0, 50.0), ("b2", 50.0, 100.0), ("c1", 50.0, 80.0), ("b3", 100.0, 150.0), ("a2", 210.0, 420.0)]
    assert [log.v[k] for k in range(len(log)) if log.kind[k] == "idle_reset"] == [420.0]


def code(request: object) -> int:
    """A request of a replay's rows: its index in the trace."""
    assert isinstance(request, int)
    return request
