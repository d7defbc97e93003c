"""Fitting the engine model: requests run through a step-by-step engine of known parameters
(the emulator's loop, written again here) come back with those parameters, and the held-out
error is small; a hand-made recording shows what each request lived through."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from sfqtui.core.analysis.engine_fit.errors import quantile
from sfqtui.core.analysis.engine_fit.fit import fit_engine
from sfqtui.core.analysis.engine_fit.lived import Lived, Served, lived_through, most_in_flight
from sfqtui.core.analysis.engine_fit.waits import replayed_errors
from sfqtui.core.engines.model import EngineModel
from sfqtui.errors import InputError
from tests.engine_steps import engine_run, varied_load

TRUTH = EngineModel(max_num_seqs=6, decode_ms_per_token=20.0, prefill_us_per_token=200.0, batch_slowdown=0.1)


def test_a_hand_made_recording_shows_each_requests_life() -> None:
    served = [Served(0.0, 0.0, 3.0, 100, 10), Served(1.0, 1.0, 1.0, 50, 5), Served(1.5, 1.5, 2.5, 20, 5)]
    assert most_in_flight(served) == 3
    with_two = lived_through(served, 2)
    assert with_two is not None
    # Its spans of one batch: (size, seconds, prompt tokens joining as it began, context held as it began and ended), the
    # context as if each request made its tokens evenly over its run (the first 10 over 3 s, the second 5 over 1 s).
    assert with_two[2].spans == pytest.approx([(2, 1.0, 20, 106 + 2 / 3 + 20, 110 + 22.5), (1, 1.0, 0, 22.5, 25.0)])
    assert with_two[0].spans[:2] == pytest.approx([(1, 1.0, 100, 100.0, 103 + 1 / 3), (2, 0.5, 50, 103 + 1 / 3 + 50, 105 + 52.5)])
    assert [replace(life, spans=()) for life in with_two] == [
        Lived(0.0, ((1, 1.0), (2, 2.0)), 170, 1, 100, 0),  # joined at 1 s by the second, whose place the third takes at 2 s
        Lived(0.0, ((2, 1.0),), 50, 2, 50, 1, mid_step=True),  # came while the first ran: waited for the step under way
        Lived(0.5, ((1, 1.0), (2, 1.0)), 20, 2, 20, 1),  # waited for the second to end
    ]
    assert lived_through(served, 3) is not None and lived_through(served, 3)[2].queued_s == 0.0  # type: ignore[index]  # not None
    assert lived_through([*served, Served(1.6, 1.6, 0.1, 1, 1)], 2) is None  # ended before a place was free: more places


def test_the_fit_finds_the_engines_parameters_and_predicts_held_out_requests() -> None:
    served = engine_run(TRUTH, varied_load(400, seed=3))
    assert most_in_flight(served) > TRUTH.max_num_seqs  # the engine's queue held requests: the places are to be found
    fitted = fit_engine(served, overhead_ms=0.0)  # no API server in front of this engine (found: the next test)
    model = fitted.model
    # Within a few percent: the fit knows when a request was sent, not at which step boundary it joined the batch.
    assert model.max_num_seqs == TRUTH.max_num_seqs and not fitted.places_given
    assert model.decode_ms_per_token == pytest.approx(TRUTH.decode_ms_per_token, rel=0.05)
    assert model.batch_slowdown == pytest.approx(TRUTH.batch_slowdown, rel=0.15)
    assert model.prefill_us_per_token == pytest.approx(TRUTH.prefill_us_per_token, rel=0.25)
    assert (fitted.fitted, fitted.held_out) == (320, 80)
    assert fitted.service_held_out.median is not None and fitted.service_held_out.median < 0.03
    assert fitted.service_held_out.p90 is not None and fitted.service_held_out.p90 < 0.08
    assert fitted.ttft_held_out is None


@pytest.mark.parametrize("overhead_ms", [0.0, 200.0])
def test_the_fit_finds_the_api_server_s_time_before_the_engine(overhead_ms: float) -> None:
    truth = EngineModel(**{**TRUTH.as_dict(), "request_overhead_ms": overhead_ms})
    fitted = fit_engine(engine_run(truth, varied_load(400, seed=4)))
    model = fitted.model
    assert not fitted.overhead_given and model.max_num_seqs == truth.max_num_seqs
    # The least squares leans a little towards an overhead: some of the wait for the step under way looks like one.
    assert overhead_ms <= model.request_overhead_ms <= overhead_ms + 40
    assert model.decode_ms_per_token == pytest.approx(truth.decode_ms_per_token, rel=0.1)
    assert fitted.service_held_out.median is not None and fitted.service_held_out.median < 0.01
    assert fitted.as_dict()["request_overhead_ms"] == "best fit of 0 up to the shortest service time"
    if overhead_ms:  # fitted as if there were none, the same engine is explained worse
        assert fit_engine(engine_run(truth, varied_load(400, seed=4)), overhead_ms=0.0).loss > 2 * fitted.loss


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_the_fit_finds_a_context_term_where_the_steps_grow_with_the_context(seed: int) -> None:
    # Prompts of up to 3,000 tokens, so that the context a batch holds varies apart from its size.
    truth = EngineModel(**{**TRUTH.as_dict(), "kv_tokens": 200_000, "context_us_per_token": 10.0})
    fitted = fit_engine(engine_run(truth, varied_load(400, seed=seed, longest_prompt=3000)), overhead_ms=0.0)
    model = fitted.model
    assert model.max_num_seqs == truth.max_num_seqs and model.slowed_prefill
    assert model.context_us_per_token == pytest.approx(truth.context_us_per_token, rel=0.15)
    assert model.decode_ms_per_token == pytest.approx(truth.decode_ms_per_token, rel=0.15)
    assert fitted.service_held_out.median is not None and fitted.service_held_out.median < 0.01
    # The fit before the shape, on the same times, is off by far more.
    plain = fit_engine(engine_run(truth, varied_load(400, seed=seed, longest_prompt=3000)), overhead_ms=0.0, shape=False)
    assert plain.model.context_us_per_token == 0 and plain.service_held_out.median is not None
    assert plain.service_held_out.median > 2 * fitted.service_held_out.median


def test_an_engine_of_the_plain_shape_is_fitted_with_it() -> None:
    fitted = fit_engine(engine_run(TRUTH, varied_load(400, seed=3)), overhead_ms=0.0)
    assert (fitted.model.context_us_per_token, fitted.model.slowed_prefill) == (0.0, True)


def test_times_to_first_token_are_predicted_too() -> None:
    served = engine_run(TRUTH, varied_load(200, seed=5), ttft=True)
    fitted = fit_engine(served, places=TRUTH.max_num_seqs)
    assert fitted.places_given and fitted.model.max_num_seqs == TRUTH.max_num_seqs
    assert fitted.model.decode_ms_per_token == pytest.approx(TRUTH.decode_ms_per_token, rel=0.05)
    assert fitted.ttft_held_out is not None and fitted.ttft_held_out.requests == 40
    assert fitted.as_dict()["held_out_error"]["ttft_s"]["requests"] == 40  # type: ignore[index]  # a dict


def test_a_wrong_fit_shows_in_the_held_out_error() -> None:
    """The error is measured, not assumed: requests whose times do not follow any engine model fit badly."""
    rng = random.Random(1)
    served = [Served(k * 0.5, k * 0.5, rng.uniform(0.05, 5.0), rng.randint(1, 100), rng.randint(1, 50)) for k in range(50)]
    errors = fit_engine(served).service_held_out
    assert errors.median is not None and errors.median > 0.2 and errors.p90 is not None and errors.p90 > 0.5


def test_too_few_requests_or_places_are_refused() -> None:
    served = engine_run(TRUTH, varied_load(9, seed=2))
    with pytest.raises(InputError, match="too few requests to fit: 9 requests"):
        fit_engine(served)
    busy = engine_run(TRUTH, varied_load(120, seed=2))
    with pytest.raises(InputError, match="--max-num-seqs 1: too few places"):
        fit_engine(busy, places=1)


def test_quantiles_interpolate_between_ranks() -> None:
    assert quantile([], 0.5) is None
    assert quantile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.5
    assert quantile([float(k) for k in range(11)], 0.9) == pytest.approx(9.0)


def test_wait_and_latency_errors_are_relative_to_what_was_recorded() -> None:
    # One place: the second waits in the engine's queue for the first; the third waited at the balancer.
    served = [Served(0.0, 0.0, 1.0, 10, 5), Served(0.5, 0.5, 1.0, 10, 5), Served(1.0, 1.5, 1.0, 10, 5)]
    lived = lived_through(served, 1)
    assert lived is not None and [life.queued_s for life in lived] == [0.0, 0.5, 0.0]
    errors = replayed_errors(served, lived, 0, start_s=[0.0, 1.0, 1.6], end_s=[1.0, 1.5, 2.8])
    assert errors.wait.requests == 2  # the first never waited: no relative error to give
    assert errors.wait.median == pytest.approx(0.1) and errors.latency.p90 == pytest.approx(0.16)
    assert errors.said() == ["wait 10.0%/18.0% (2 requests that waited)", "arrival to end 0.0%/16.0%"]


def test_the_api_server_s_time_alone_is_no_wait() -> None:
    # 0.25 s in the API server: the first waits only that, the second also for the first's place.
    served = [Served(0.0, 0.0, 1.0, 10, 5), Served(0.5, 0.5, 1.0, 10, 5)]
    lived = lived_through(served, 1, overhead_s=0.25)
    assert lived is not None and [life.queued_s for life in lived] == [0.25, 0.5]
    errors = replayed_errors(served, lived, 0, start_s=[0.25, 1.0], end_s=[1.0, 1.5], overhead_s=0.25)
    assert errors.wait.requests == 1 and errors.wait.median == 0.0
    assert replayed_errors(served, lived, 0, start_s=[0.25, 1.0], end_s=[1.0, 1.5]).wait.requests == 2
