"""Placement among engines by the prefixes they hold (docs/semantics.md §14): prefix placement
sends a request where its longest prefix is believed held among engines with a free place,
affinity wherever it is, room by room alone; none of them changes the scheduler's order."""

from __future__ import annotations

import pytest

from sfqtui.core.analysis.prefix_figures import PrefixTally
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replay.run_spec import RunSpec
from sfqtui.core.requests.trace import PrefixBlocks, Trace
from sfqtui.errors import InputError

MODEL = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)


def trace(rows: list[tuple[str, str, float, int, int, list[int]]]) -> Trace:
    """Requests (id, user, arrival, prompt tokens, output tokens, blocks of 32 tokens), each costing its prompt."""
    return Trace([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], input_tokens=[r[3] for r in rows],
                 output_tokens=[r[4] for r in rows], cost=[float(r[3]) for r in rows],
                 prefix_blocks=PrefixBlocks.of_lists([r[5] for r in rows], 32))


def placed(requests: Trace, placement: str, model: EngineModel = MODEL, slots: int = 4) -> tuple[list[str], dict[str, int]]:
    """The dispatch order (request ids) and the engine each request started on."""
    order, engine, _started, _idle = replayed(requests, placement, model, slots)
    return order, engine


def replayed(requests: Trace, placement: str, model: EngineModel = MODEL,
             slots: int = 4) -> tuple[list[str], dict[str, int], dict[str, float], float]:
    """``placed``'s order and engines, when each request started, and how long an engine idled beside a queue."""
    columns = Replay(requests, ReplayConfig(slots=slots, engine=EngineSettings(model, 2, placement=placement))).run_all()
    assert columns.upstream is not None
    order = [requests.request_id[r] for k, r in zip(columns.kind, columns.req) if KINDS[k] == "dispatch"]
    starts = [(requests.request_id[r], e, t) for k, r, e, t in zip(columns.kind, columns.req, columns.upstream, columns.t)
              if KINDS[k] == "start"]
    tally = PrefixTally(requests, 2)
    tally.feed(columns)
    return order, {r: e for r, e, _t in starts}, {r: t for r, _e, t in starts}, tally.figures.idle_while_queued_s


def test_prefix_placement_sends_a_continuation_to_the_engine_holding_its_prefix() -> None:
    # r1 goes to engine 1 (turns), r2 to engine 0; both end by t = 2. r3 continues r1's prompt:
    # by room it goes to engine 1 again only by turn, so r4 (r2's continuation) shows the difference.
    rows = trace([("r1", "a", 0.0, 64, 1, [1, 2]), ("r2", "b", 0.0, 64, 1, [5, 6]),
                  ("r3", "b", 3.0, 96, 1, [5, 6, 7]), ("r4", "a", 4.0, 96, 1, [1, 2, 3])])
    _, by_room = placed(rows, "room")
    _, by_prefix = placed(rows, "prefix")
    assert (by_prefix["r3"], by_prefix["r4"]) == (by_prefix["r2"], by_prefix["r1"])
    assert (by_room["r3"], by_room["r4"]) != (by_prefix["r3"], by_prefix["r4"])


def test_prefix_placement_is_bounded_by_load_and_affinity_is_not() -> None:
    # One place an engine: r1 runs long on its engine; r2 shares its prefix. Prefix placement
    # sends r2 to the free engine, affinity queues it behind r1.
    one = EngineModel(max_num_seqs=1, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)
    rows = trace([("r1", "a", 0.0, 64, 40, [1, 2]), ("r2", "b", 0.5, 96, 1, [1, 2, 3])])
    _, by_prefix = placed(rows, "prefix", one)
    _, by_affinity = placed(rows, "affinity", one)
    assert by_prefix["r2"] != by_prefix["r1"]
    assert by_affinity["r2"] == by_affinity["r1"]


def test_prefix_placement_never_leaves_an_engine_idle_beside_a_request_waiting_for_a_step() -> None:
    # r1 runs on its engine, whose first step (its 64-token prefill) lasts until t = 1.125. r2
    # shares r1's prefix and comes at t = 0.5, when the other engine has nothing: sent to r1's
    # engine, which has a free place, it would wait there for the step under way while the
    # other engine idles; it goes to the idle engine and starts at once.
    rows = trace([("r1", "a", 0.0, 64, 40, [1, 2]), ("r2", "b", 0.5, 96, 1, [1, 2, 3])])
    _order, engine, started, idle = replayed(rows, "prefix")
    assert engine["r2"] != engine["r1"] and started["r2"] == 0.5 and idle == 0.0
    _order, engine, _started, idle = replayed(rows, "affinity")  # load ignored: it waits for the step
    assert engine["r2"] == engine["r1"] and idle == pytest.approx(0.625)


def test_a_warm_engine_between_steps_keeps_a_request_it_starts_at_once() -> None:
    # r1 runs long on engine P, rY briefly on Q (done at t = 0.625). rS, sent while both are busy,
    # goes to P for r1's prefix and finishes there at t = 2.375, when r2 comes with the same
    # prefix: Q has nothing in flight, but P is between steps with a place, so r2 starts there at once.
    rows = trace([("r1", "a", 0.0, 64, 40, [1, 2]), ("rY", "c", 0.0, 32, 1, [9]),
                  ("rS", "b", 0.3, 96, 1, [1, 2, 4]), ("r2", "d", 2.375, 96, 1, [1, 2, 5])])
    _order, engine, started, _idle = replayed(rows, "prefix")
    assert engine["rY"] != engine["r1"] and engine["rS"] == engine["r1"]
    assert engine["r2"] == engine["r1"] and started["r2"] == 2.375


@pytest.mark.parametrize("placement", ["prefix", "affinity"])
def test_placement_never_changes_the_scheduler_s_order(placement: str) -> None:
    """Every request waits from t = 0, so the dispatch order is SFQ's alone, whatever the engines do."""
    rows = trace([(f"r{k:02d}", "abc"[k % 3], 0.0, 32 * (1 + k % 4) + k, 1 + k % 5, [k % 3, 10 + k % 2][: 1 + k % 2])
                  for k in range(30)])
    assert placed(rows, placement, slots=3)[0] == placed(rows, "room", slots=3)[0]


def test_placement_by_prefix_needs_blocks() -> None:
    plain = Trace(["r1"], ["u"], [0.0], input_tokens=[64], output_tokens=[1], cost=[1.0])
    with pytest.raises(InputError, match="--placement prefix places requests by the prefixes engines hold: it needs a trace with prefix_blocks"):
        Replay(plain, ReplayConfig(slots=1, engine=EngineSettings(MODEL, 2, placement="prefix")))
    with pytest.raises(InputError, match="--placement 'nearest': choose one of room, prefix, affinity"):
        EngineSettings(MODEL, 2, placement="nearest")


def test_run_specs_take_placement_and_pricing() -> None:
    spec = RunSpec.parse("sfq@engines=2,placement=prefix,pricing=cache-aware")
    config = spec.config(ReplayConfig(slots=4))
    assert config.engine is not None and config.engine.placement == "prefix" and config.estimator.cache_aware
    assert str(spec) == "sfq@engines=2,placement=prefix,pricing=cache-aware" and not spec.plain
    assert set(spec.changes(ReplayConfig(slots=4))) == {"scheduler", "replicas", "engine", "capacity", "estimator"}
    with pytest.raises(InputError, match="pricing=free: choose one of cache-blind, cache-aware"):
        RunSpec.parse("sfq@pricing=free")
    with pytest.raises(InputError, match="placement=bogus: choose one of room, prefix, affinity"):
        RunSpec.parse("sfq@placement=bogus")
    with pytest.raises(InputError, match="placement places requests among engines"):
        RunSpec.parse("sfq@placement=prefix").config(ReplayConfig(slots=4))
