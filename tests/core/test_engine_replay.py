"""The replay on the engine model (docs/semantics.md, "The engine model in a replay"):
exact step times on small hand-computed cases, the engine's FCFS queue, KV holding back
the head, the batch slowing its steps down, and what a limit above the places does to
SFQ's order.

Step times are chosen exact in binary (125 ms a decode step, 1/64 s per prompt token, a
slowdown of 1: a batch of 2 takes twice as long), so the times below are exact.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS, EventLayout
from sfqtui.core.log.rows import rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError

MODEL = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)

Row = tuple[float, str, str, int]  # (t, kind, request id, engine)


def trace(rows: list[tuple[str, str, float, int, int]]) -> Trace:
    """Requests (id, user, arrival, prompt tokens, output tokens), each costing 1."""
    return Trace([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], input_tokens=[r[3] for r in rows],
                 output_tokens=[r[4] for r in rows], cost=[1.0] * len(rows))


def engine_rows(requests: Trace, slots: int, model: EngineModel = MODEL, engines: int = 1, scheduler: str = "sfq") -> list[Row]:
    """(t, kind, request id, engine) of every dispatch, start and complete."""
    columns = Replay(requests, ReplayConfig(scheduler=scheduler, slots=slots, engine=EngineSettings(model, engines))).run_all()
    assert columns.upstream is not None
    return [(t, KINDS[kind], requests.request_id[req], engine)
            for t, kind, req, engine in zip(columns.t, columns.kind, columns.req, columns.upstream)
            if KINDS[kind] in ("dispatch", "start", "complete")]


def of_kind(rows: list[Row], kind: str) -> list[tuple[float, str]]:
    return [(t, rid) for t, k, rid, _ in rows if k == kind]


def test_two_places_a_few_requests_start_and_complete_at_the_model_s_step_ends() -> None:
    # a and b start together: the first step prefills a's 8 tokens, (0.125 + 8/64) x 2 = 0.5 s; the next take 0.25 s.
    # b (2 tokens) ends at 0.75; c, queued since 0.1 behind a full batch, joins then (a step of 0.25 s);
    # a's third token and c's only one come at 1.0, a first (it joined first).
    rows = engine_rows(trace([("a", "A", 0.0, 8, 3), ("b", "B", 0.0, 0, 2), ("c", "A", 0.1, 0, 1)]), slots=3)
    assert of_kind(rows, "dispatch") == [(0.0, "a"), (0.0, "b"), (0.1, "c")]
    assert of_kind(rows, "start") == [(0.0, "a"), (0.0, "b"), (0.75, "c")]
    assert of_kind(rows, "complete") == [(0.75, "b"), (1.0, "a"), (1.0, "c")]
    kinds_at_075 = [(k, rid) for t, k, rid, _ in rows if t == 0.75]
    assert kinds_at_075 == [("complete", "b"), ("start", "c")]  # the step ends, then the head joins the next


def test_a_request_dispatched_mid_step_waits_for_the_step_to_end() -> None:
    # a runs alone (0.125 s steps, 4 of them); b arrives at 0.2, during a's second step, with a place free: it joins at 0.25.
    # From 0.25 both run (0.25 s steps): a's last two tokens end at 0.5 and 0.75; b's 2 tokens at 0.5 and 0.75.
    rows = engine_rows(trace([("a", "A", 0.0, 0, 4), ("b", "B", 0.2, 0, 2)]), slots=2)
    assert of_kind(rows, "start") == [(0.0, "a"), (0.25, "b")]
    assert of_kind(rows, "complete") == [(0.75, "a"), (0.75, "b")]


def test_a_request_dispatched_exactly_at_a_step_end_joins_the_next_step() -> None:
    rows = engine_rows(trace([("a", "A", 0.0, 0, 4), ("b", "B", 0.25, 0, 1)]), slots=2)
    assert of_kind(rows, "start") == [(0.0, "a"), (0.25, "b")]
    # a made 2 tokens by 0.25; with b, a step of 0.25 s makes a's third and b's only token; a then runs alone again.
    assert of_kind(rows, "complete") == [(0.5, "b"), (0.625, "a")]


def test_the_batch_slows_each_step_down() -> None:
    alone = engine_rows(trace([("a", "A", 0.0, 0, 4)]), slots=1)
    together = engine_rows(trace([("a", "A", 0.0, 0, 4), ("b", "B", 0.0, 0, 4)]), slots=2)
    assert of_kind(alone, "complete") == [(0.5, "a")]  # 4 steps of 0.125 s
    assert of_kind(together, "complete") == [(1.0, "a"), (1.0, "b")]  # 4 steps of 0.25 s


def test_the_engine_queue_is_fcfs_and_kv_holds_back_its_head() -> None:
    small_kv = EngineModel(max_num_seqs=2, kv_tokens=10, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)
    # a needs 8 KV tokens; b (3) does not fit beside it though a place is free, and holds back c (2), which would fit.
    rows = engine_rows(trace([("a", "A", 0.0, 4, 4), ("b", "B", 0.0, 1, 2), ("c", "C", 0.0, 0, 2)]), slots=3, model=small_kv,
                       scheduler="fifo")
    # a alone: a first step of 0.125 + 4/64 = 0.1875 s, then 3 of 0.125 s: done at 0.5625; b and c then join together.
    assert of_kind(rows, "start") == [(0.0, "a"), (0.5625, "b"), (0.5625, "c")]
    # b and c: a first step of (0.125 + 1/64) x 2 = 0.28125 s, then 0.25 s: both end their second token at 1.09375.
    assert of_kind(rows, "complete") == [(0.5625, "a"), (1.09375, "b"), (1.09375, "c")]


def test_a_request_longer_than_the_kv_is_refused() -> None:
    with pytest.raises(InputError, match="request big needs 1,200 tokens of KV"):
        engine_rows(trace([("big", "A", 0.0, 1000, 200)]), slots=1)


def _heavy_and_light() -> Trace:
    """'heavy' has 12 requests queued at 0; 'light' sends 4 just after: equal requests of 4 tokens."""
    rows = [(f"h{k:02d}", "heavy", 0.0, 0, 4) for k in range(12)] + [(f"l{k}", "light", 0.01, 0, 4) for k in range(4)]
    return trace(rows)


def test_a_limit_equal_to_the_places_keeps_sfq_s_order() -> None:
    rows = engine_rows(_heavy_and_light(), slots=2)
    dispatched, started = of_kind(rows, "dispatch"), of_kind(rows, "start")
    assert started == dispatched  # every request starts when SFQ sends it: the engine never queues
    first_eight = [rid for _, rid in started[:8]]
    assert sum(rid.startswith("l") for rid in first_eight) == 3  # light gets its turns as soon as it arrives


def test_a_limit_above_the_places_lets_the_engine_s_queue_undo_sfq_s_order() -> None:
    rows = engine_rows(_heavy_and_light(), slots=16)
    started = [rid for _, rid in of_kind(rows, "start")]
    assert [rid for rid in started if rid.startswith("h")] == [f"h{k:02d}" for k in range(12)]
    assert started[12:] == ["l0", "l1", "l2", "l3"]  # light waits behind all of heavy's, dispatched before it arrived


def test_several_engines_take_the_request_with_the_fewest_in_flight() -> None:
    rows = engine_rows(trace([(f"r{k}", "A", 0.0, 0, 2) for k in range(5)]), slots=5, engines=2)
    engines = [engine for _, kind, _, engine in rows if kind == "dispatch"]
    assert engines == [1, 0, 1, 0, 1]  # the fewest in flight, ties in turns as the proxy picks its upstreams
    # Starts at one time go engine by engine, each in its queue's order; r4 waits for a place on engine 1.
    assert of_kind(rows, "start") == [(0.0, "r1"), (0.0, "r3"), (0.0, "r0"), (0.0, "r2"), (0.5, "r4")]


def test_random_traces_send_each_request_to_the_first_engine_with_the_fewest_in_flight_from_the_turn() -> None:
    """The room rule, read back from the log: at each dispatch, the fewest in flight (dispatched and not
    complete, also while on the way under request_overhead_ms), the first from the engine whose turn it is."""
    rng = random.Random(11)
    for _ in range(20):
        model = EngineModel(max_num_seqs=rng.randint(1, 3), prefill_us_per_token=40, decode_ms_per_token=10,
                            request_overhead_ms=rng.choice([0.0, 15.0]))
        n, engines = rng.randint(1, 80), rng.randint(2, 4)
        arrivals = sorted(round(rng.uniform(0, 2), 2) for _ in range(n))
        requests = trace([(f"r{k}", rng.choice("ABC"), arrivals[k], rng.randint(0, 50), rng.randint(1, 40)) for k in range(n)])
        config = ReplayConfig(slots=rng.randint(1, 14), engine=EngineSettings(model, engines))
        columns = Replay(requests, config).run_all()
        assert columns.upstream is not None
        inflight, turn = [0] * engines, 0
        for kind, engine in zip(columns.kind, columns.upstream):
            if KINDS[kind] == "dispatch":
                turn = (turn + 1) % engines
                least = min(inflight)
                assert engine == next(e % engines for e in range(turn, turn + engines) if inflight[e % engines] == least)
                inflight[engine] += 1
            elif KINDS[kind] == "complete":
                inflight[engine] -= 1


def test_random_traces_keep_the_engine_s_rules() -> None:
    """Every request: arrive <= dispatch <= start <= complete; per engine at most max_num_seqs
    running and KV for their whole length; starts in the order the engine got them."""
    rng = random.Random(7)
    model = EngineModel(max_num_seqs=3, kv_tokens=400, prefill_us_per_token=40, decode_ms_per_token=10, batch_slowdown=0.2)
    for _ in range(20):
        n = rng.randint(1, 60)
        arrivals = sorted(round(rng.uniform(0, 3), 2) for _ in range(n))
        requests = trace([(f"r{k}", rng.choice("ABC"), arrivals[k], rng.randint(0, 150), rng.randint(0, 100)) for k in range(n)])
        slots = rng.randint(1, 12)
        engines = rng.randint(1, 3)
        config = ReplayConfig(scheduler=rng.choice(["sfq", "drr", "fifo", "vtc"]), slots=slots, engine=EngineSettings(model, engines))
        columns = Replay(requests, config).run_all()
        prompts, outputs = requests.input_tokens, requests.output_tokens
        assert columns.upstream is not None and prompts is not None and outputs is not None
        seen: dict[str, dict[str, float]] = defaultdict(dict)
        sent: dict[int, list[int]] = defaultdict(list)
        began: dict[int, list[int]] = defaultdict(list)
        running: dict[int, set[int]] = defaultdict(set)
        inflight = 0
        for t, kind, req, engine in zip(columns.t, columns.kind, columns.req, columns.upstream):
            name = KINDS[kind]
            if req < 0:
                continue
            seen[name][str(req)] = t
            if name == "dispatch":
                sent[engine].append(req)
                inflight += 1
                assert inflight <= slots
            elif name == "start":
                began[engine].append(req)
                running[engine].add(req)
                assert len(running[engine]) <= model.max_num_seqs
                need = sum(prompts[r] + max(1, outputs[r]) for r in running[engine])
                assert need <= model.kv_tokens
            elif name == "complete":
                running[engine].discard(req)
                inflight -= 1
        assert len(seen["complete"]) == n
        for rid, t in seen["complete"].items():
            assert seen["arrive"][rid] <= seen["dispatch"][rid] <= seen["start"][rid] < t
        assert {e: began[e] for e in began} == {e: sent[e] for e in sent}


def test_start_rows_leave_the_audit_alone() -> None:
    from sfqtui.core.analysis.audit import audit

    requests = _heavy_and_light()
    columns = Replay(requests, ReplayConfig(slots=6, engine=EngineSettings(MODEL))).run_all()
    report = audit(rows_from_replay(columns, requests, "sfq"))
    assert report.violation_count == 0


def test_without_the_engine_model_rows_are_packed_as_before() -> None:
    # The layout of a replay without the engine model is the one every log was written from.
    assert EventLayout.of(True, "meter", False, False).struct.format == "=dbqdd d?? ?i".replace(" ", "")
    assert EventLayout.of(True, "meter", False, False).names == ("t", "kind", "req", "cost", "v", "meter", "deficit", "credit", "replica", "user")
    columns = Replay(_heavy_and_light(), ReplayConfig(slots=2)).run_all()
    assert columns.upstream is None and "start" not in {KINDS[k] for k in columns.kind}


@pytest.mark.parametrize("engine", [None, EngineSettings(MODEL)])
def test_only_dispatch_rows_carry_cost_and_credit(engine: EngineSettings | None) -> None:
    # Every other row is packed without them (EventLayout.uncharged): their bytes are zero, read as null.
    columns = Replay(_heavy_and_light(), ReplayConfig("drr", slots=2, engine=engine)).run_all()
    assert {KINDS[kind] for kind in columns.kind} >= {"arrive", "dispatch", "complete"}
    for kind, cost, credit in zip(columns.kind, columns.cost, columns.credit):
        assert (cost is not None, credit is not None) == ((KINDS[kind] == "dispatch"),) * 2
