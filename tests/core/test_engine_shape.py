"""The engine model's step shape beyond its defaults (docs/engine.md, "The model"): a context
term, and a prefill outside the batch slowdown, in a replay as in the emulator's loop.

The replay keeps a run of steps in closed form (the end of its first step, its second step's
time and how much longer each next step is); the emulator's loop, written again step by step
in tests/engine_steps.py, adds each step's time. Both must end every request at the same time.
"""

from __future__ import annotations

import random

import pytest

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.modelled import ModelledEngine
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError
from tests.engine_steps import engine_run


def ends(model: EngineModel, sent: list[tuple[float, int, int]]) -> list[float]:
    """When each request (arrival, prompt tokens, output tokens) completes in a replay on one engine, sent as it comes."""
    requests = Trace([f"r{k}" for k in range(len(sent))], ["A"] * len(sent), [t for t, _, _ in sent],
                     input_tokens=[p for _, p, _ in sent], output_tokens=[m for _, _, m in sent], cost=[1.0] * len(sent))
    columns = Replay(requests, ReplayConfig(scheduler="fifo", slots=len(sent), engine=EngineSettings(model, 1))).run_all()
    done = {req: t for t, kind, req in zip(columns.t, columns.kind, columns.req) if KINDS[kind] == "complete"}
    return [done[k] for k in range(len(sent))]


def test_the_defaults_are_the_model_before_the_shape() -> None:
    model = EngineModel(decode_ms_per_token=10.0, prefill_us_per_token=100.0, batch_slowdown=0.5)
    assert (model.context_us_per_token, model.slowed_prefill) == (0.0, True)
    assert model.step_s(3, 200, context=5000) == (0.01 + 0.02) * 2.0


def test_a_step_costs_its_context_and_an_unslowed_prefill_is_added_after_the_slowdown() -> None:
    model = EngineModel(decode_ms_per_token=10.0, prefill_us_per_token=100.0, batch_slowdown=0.5, context_us_per_token=2.0,
                        slowed_prefill=False)
    assert model.step_s(3, 200, context=5000) == pytest.approx(0.01 * 2.0 + 0.02 + 0.01)
    slowed = EngineModel(decode_ms_per_token=10.0, prefill_us_per_token=100.0, batch_slowdown=0.5, context_us_per_token=2.0)
    assert slowed.step_s(3, 200, context=5000) == pytest.approx((0.01 + 0.02) * 2.0 + 0.01)


def test_one_request_s_steps_grow_with_its_context() -> None:
    # Exact in binary: 1/8 s a decode step, 1/64 s a prompt token, 1/1024 s a token of context. The first step prefills
    # 8 tokens with 8 held: 1/8 + 8/64 + 8/1024; then 1/8 + 9/1024, and 1/8 + 10/1024.
    model = EngineModel(max_num_seqs=2, kv_tokens=1000, prefill_us_per_token=15625, decode_ms_per_token=125, batch_slowdown=1.0,
                        context_us_per_token=976.5625, slowed_prefill=False)
    assert ends(model, [(0.0, 8, 3)]) == [0.125 + 0.125 + 8 / 1024 + 0.125 + 9 / 1024 + 0.125 + 10 / 1024]


@pytest.mark.parametrize("slowed_prefill", [True, False])
def test_the_replay_ends_every_request_when_the_engine_s_loop_does(slowed_prefill: bool) -> None:
    rng = random.Random(11)
    model = EngineModel(max_num_seqs=4, prefill_us_per_token=300.0, decode_ms_per_token=4.0, batch_slowdown=0.3,
                        context_us_per_token=5.0, slowed_prefill=slowed_prefill)
    for _ in range(5):
        t, sent = 0.0, []
        for _ in range(60):
            t += rng.expovariate(8.0)
            sent.append((round(t, 3), rng.randint(1, 900), rng.randint(1, 40)))
        measured = engine_run(model, sent)
        assert ends(model, sent) == pytest.approx([at + r.service_s for at, r in zip([s[0] for s in sent], measured)], rel=1e-9, abs=1e-9)


def test_the_step_under_way_is_found_on_the_series_as_end_of_times_it() -> None:
    """step_at's root of the series is rounded; it must still name the first step that ends at or after
    ``now`` by end_of's own sums, at a step's end exactly and between two."""
    engine, rng = ModelledEngine(EngineModel(context_us_per_token=5.0), 0), random.Random(7)
    for _ in range(2_000):
        engine.first, engine.first_end = rng.randint(0, 1_000), rng.uniform(0, 1e4)
        engine.step, engine.grow = rng.uniform(1e-3, 0.05), rng.uniform(1e-7, 1e-4)
        s = engine.first + rng.randint(1, 3_000)
        for now in (engine.end_of(s), (engine.end_of(s - 1) + engine.end_of(s)) / 2):
            assert engine.step_at(now) == s
            assert engine.end_of(engine.step_at(now, after=False) - 1) <= now


def test_a_bad_shape_is_refused_in_one_line() -> None:
    with pytest.raises(InputError, match="--context-us-per-token"):
        EngineModel(context_us_per_token=-1.0)
    with pytest.raises(InputError, match="slowed_prefill"):
        EngineModel(slowed_prefill="no")  # type: ignore[arg-type]  # what a model file could hold


def test_a_model_of_the_default_shape_is_saved_as_before() -> None:
    """A model file, and a log's metadata that records its model, name the shape only where it is not the default."""
    assert "context_us_per_token" not in EngineModel().as_dict() and "slowed_prefill" not in EngineModel().as_dict()
    shaped = EngineModel(context_us_per_token=3.5, slowed_prefill=False)
    assert shaped.as_dict()["context_us_per_token"] == 3.5 and shaped.as_dict()["slowed_prefill"] is False
    assert EngineModel.from_dict(shaped.as_dict()) == shaped
