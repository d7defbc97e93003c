"""Dynamo prices a request by max(1, its uncached input tokens) (semantics §15): on the engine
model with a trace of prefix blocks, the cached tokens are those the balancer predicts held where
the request would go; without blocks or without the engine model, the input tokens, as before."""

from __future__ import annotations

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import PrefixBlocks, Trace

MODEL = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0)
IDS = ["r1", "r2", "r3", "r4", "s1", "s2"]
USERS = ["a", "a", "a", "a", "b", "b"]


def trace(blocks: bool) -> Trace:
    """a's four prompts of 80 tokens share their first two blocks of 32 (64 tokens); b's two share nothing."""
    rows = [[1, 2], [1, 2], [1, 2], [1, 2], [5, 6], [7, 8]]
    return Trace(IDS, USERS, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05], input_tokens=[80] * 6, output_tokens=[1] * 6, cost=[1.0] * 6,
                 prefix_blocks=PrefixBlocks.of_lists(rows, 32) if blocks else None)


def credits(requests: Trace, engines: int | None = 1) -> dict[str, float | None]:
    """Each dispatch's credit: the class deficit it was sent against, which falls by each request's cost."""
    config = ReplayConfig("dynamo", 1, engine=None if engines is None else EngineSettings(MODEL, engines))
    columns = Replay(requests, config).run_all()
    assert columns.credit is not None
    return {requests.request_id[r]: c for k, r, c in zip(columns.kind, columns.req, columns.credit) if KINDS[k] == "dispatch"}


def test_dynamo_charges_the_input_the_engine_does_not_hold() -> None:
    # One class, quantum 1,024 tokens. r1 finds nothing held and costs 80; r2, r3 and r4 find
    # their 64 shared tokens held where they go and cost 16 each; b's prompts share nothing.
    assert credits(trace(blocks=True)) == {"r1": 1024.0, "r2": 1024.0, "r3": 1008.0, "r4": 992.0, "s1": 976.0, "s2": 896.0}
    plain = {"r1": 1024.0, "r2": 1024.0, "r3": 944.0, "r4": 864.0, "s1": 784.0, "s2": 704.0}
    assert credits(trace(blocks=False)) == plain  # no blocks: every input token is charged
    assert credits(trace(blocks=True), engines=None) == plain  # no engine model: no cache to hold them


def test_asking_the_heads_price_leaves_the_placement_as_it_was() -> None:
    # Two engines: pricing a queue head asks where it would go without taking the turn, so each
    # request goes where it went before (the same start rows as FIFO, which asks nothing).
    def starts(scheduler: str) -> list[tuple[float, int, int | None]]:
        columns = Replay(trace(blocks=True), ReplayConfig(scheduler, 1, engine=EngineSettings(MODEL, 2))).run_all()
        assert columns.upstream is not None
        return [(t, r, e) for t, k, r, e in zip(columns.t, columns.kind, columns.req, columns.upstream) if KINDS[k] == "start"]

    assert starts("dynamo") == starts("fifo")
