"""Cache-aware pricing (docs/semantics.md §14): the input charged is max(1, input - cached), the
cached tokens predicted at dispatch from the balancer's index of what the engine the request
goes to holds; the charge is made once, at dispatch, and calibration sets it against the
cached tokens the engine found."""

from __future__ import annotations

import pytest

from sfqtui.core.analysis.cache_calibration import cache_calibration
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import PrefixBlocks, Trace
from sfqtui.errors import InputError

MODEL = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)
AWARE = EstimatorParams(input_weight=1.0, output_weight=0.0, cache_aware=True)


def trace(rows: list[tuple[str, str, float, int, list[int]]]) -> Trace:
    """Requests (id, user, arrival, prompt tokens, blocks of 32 tokens), one output token each."""
    return Trace([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], input_tokens=[r[3] for r in rows],
                 output_tokens=[1] * len(rows), prefix_blocks=PrefixBlocks.of_lists([r[4] for r in rows], 32))


def charges(requests: Trace, params: EstimatorParams = AWARE) -> dict[str, float | None]:
    columns = Replay(requests, ReplayConfig(slots=1, estimator=params, engine=EngineSettings(MODEL))).run_all()
    return {requests.request_id[r]: c for k, r, c in zip(columns.kind, columns.req, columns.cost) if KINDS[k] == "dispatch"}


def test_the_cached_input_is_not_charged() -> None:
    rows = trace([("r1", "a", 0.0, 64, [1, 2]), ("r2", "a", 2.0, 80, [1, 2]), ("r3", "b", 3.0, 64, [7, 8]), ("r4", "a", 4.0, 64, [1, 2])])
    assert charges(rows) == {"r1": 64.0, "r2": 16.0, "r3": 64.0, "r4": 32.0}  # r4: all held, its last block computed again
    blind = EstimatorParams(input_weight=1.0, output_weight=0.0)
    assert charges(rows, blind) == {"r1": 64.0, "r2": 80.0, "r3": 64.0, "r4": 64.0}


def test_cache_aware_pricing_needs_engines_and_blocks() -> None:
    plain = Trace(["r1"], ["u"], [0.0], input_tokens=[64], output_tokens=[1])
    with pytest.raises(InputError, match="--cache-aware charges the input an engine will compute"):
        Replay(plain, ReplayConfig(slots=1, estimator=AWARE, engine=EngineSettings(MODEL)))
    with pytest.raises(InputError, match="--cache-aware"):
        Replay(trace([("r1", "a", 0.0, 64, [1, 2])]), ReplayConfig(slots=1, estimator=AWARE))


def test_calibration_sets_the_predicted_cached_tokens_against_those_found() -> None:
    # An engine of 200 KV tokens: b's 190 tokens push both of a's blocks out of its cache (they run
    # beside nothing, but the cache keeps only unpinned blocks in what is left); the balancer's index
    # (6 blocks: 200 // 32) lets only a's tail go, so a's next request is predicted 32 cached tokens and finds 0.
    small = EngineModel(max_num_seqs=2, kv_tokens=200, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)
    rows = trace([("r1", "a", 0.0, 64, [1, 2]), ("r2", "b", 2.0, 189, [5, 6, 7, 8, 9]), ("r3", "a", 10.0, 64, [1, 2])])
    config = ReplayConfig(slots=1, estimator=EstimatorParams(), engine=EngineSettings(small, 1))
    found = {u.user: u for u in cache_calibration(rows, config)}
    assert (found["a"].predicted, found["a"].cached, found["a"].aware_error, found["a"].blind_overcharge) == (32, 0, -32, 0)
    assert (found["b"].predicted, found["b"].cached) == (0, 0)
