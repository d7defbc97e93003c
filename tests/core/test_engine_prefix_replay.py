"""The engine model's prefix cache in a replay (docs/semantics.md §14): a request's prefill
computes only the tokens after its longest held prefix, the cached tokens are on its start
row, and the cache shares the engine's KV with the running requests.

Step times are exact in binary (125 ms a decode step, 1/64 s per prompt token)."""

from __future__ import annotations

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.modelled import ModelledEngine
from sfqtui.core.engines.prefix_cache import PrefixCache
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import PrefixBlocks, Trace

MODEL = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)


def trace(rows: list[tuple[str, float, int, list[int]]], block_tokens: int = 32) -> Trace:
    """Requests (id, arrival, prompt tokens, blocks) of one user, one output token each."""
    return Trace([r[0] for r in rows], ["u"] * len(rows), [r[1] for r in rows], input_tokens=[r[2] for r in rows],
                 output_tokens=[1] * len(rows), cost=[1.0] * len(rows),
                 prefix_blocks=PrefixBlocks.of_lists([r[3] for r in rows], block_tokens))


def starts_and_ends(requests: Trace, model: EngineModel = MODEL, engines: int = 1) -> dict[str, tuple[float, float, int | None]]:
    """Each request's (start, complete, cached tokens)."""
    columns = Replay(requests, ReplayConfig(slots=4, engine=EngineSettings(model, engines))).run_all()
    assert columns.cached_tokens is not None
    found: dict[str, list] = {}
    for t, kind, req, cached in zip(columns.t, columns.kind, columns.req, columns.cached_tokens):
        if KINDS[kind] == "start":
            found[requests.request_id[req]] = [t, None, cached]
        elif KINDS[kind] == "complete":
            found[requests.request_id[req]][1] = t
    return {rid: (s, e, c) for rid, (s, e, c) in found.items()}


def test_prefill_computes_only_the_tokens_after_the_held_prefix() -> None:
    # r1 prefills 64 tokens: 0.125 + 64/64 = 1.125 s. r2 sends the same 64 tokens: all are held,
    # but as in vLLM a hit is whole blocks of at most the prompt less one token, so its last block
    # is computed again (0.125 + 32/64). r3 has 16 tokens more (0.125 + 16/64).
    found = starts_and_ends(trace([("r1", 0.0, 64, [1, 2]), ("r2", 2.0, 64, [1, 2]), ("r3", 3.0, 80, [1, 2])]))
    assert found == {"r1": (0.0, 1.125, 0), "r2": (2.0, 2.625, 32), "r3": (3.0, 3.375, 64)}


def test_a_different_first_block_is_no_prefix() -> None:
    found = starts_and_ends(trace([("r1", 0.0, 64, [1, 2]), ("r2", 2.0, 64, [9, 2])]))
    assert found["r2"] == (2.0, 3.125, 0)


def test_each_engine_has_its_own_cache() -> None:
    # Two engines, the fewest in flight first, ties in turns: r1 goes to engine 1, r2 (while r1 runs) to engine 0.
    found = starts_and_ends(trace([("r1", 0.0, 64, [1, 2]), ("r2", 0.5, 64, [1, 2])]), engines=2)
    assert found["r2"][2] == 0


def test_blocks_that_no_longer_fit_beside_running_requests_are_evicted() -> None:
    # 200 tokens of KV: r1's two blocks (64 tokens) stay held after it ends; r2 needs 190 tokens,
    # so both leave and r3 finds nothing of r1's prompt.
    small = EngineModel(max_num_seqs=2, kv_tokens=200, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)
    found = starts_and_ends(trace([("r1", 0.0, 64, [1, 2]), ("r2", 2.0, 189, [5, 6, 7, 8, 9]), ("r3", 10.0, 64, [1, 2])]), small)
    assert found["r3"][2] == 0
    found = starts_and_ends(trace([("r1", 0.0, 64, [1, 2]), ("r2", 2.0, 160, [5, 6, 7, 8]), ("r3", 10.0, 64, [1, 2])]), small)
    assert found["r3"][2] == 32  # r2 (161 tokens) needs one block's room: r1's tail left, its head stayed


def test_a_replay_without_blocks_has_no_cached_tokens() -> None:
    plain = Trace(["r1"], ["u"], [0.0], input_tokens=[64], output_tokens=[1], cost=[1.0])
    assert Replay(plain, ReplayConfig(slots=1, engine=EngineSettings(MODEL))).run_all().cached_tokens is None


def test_kv_use_counts_a_shared_prompt_block_once() -> None:
    """Two running requests on one 1,024-token prefix hold it once, as vLLM's kv_cache_usage_perc
    and the emulated engine count it: what --slots auto reads in a replay."""
    model = EngineModel(max_num_seqs=8, kv_tokens=4096)
    engine = ModelledEngine(model, 0)
    engine.cache = PrefixCache(model.kv_tokens, 16)
    blocks = tuple(range(1, 65))
    for req in range(2):
        engine.submit(0.0, (req, "u", 0, 0, 1024 + 8, 100, blocks, 0))
    engine.settle(0.0)
    made = 6  # the tokens each has made by the end of its sixth step
    assert engine.kv_usage(engine.first_end + 5 * engine.step) == (1024 + 2 * (8 + made)) / 4096
