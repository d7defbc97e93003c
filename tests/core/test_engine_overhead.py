"""``request_overhead_ms``: the time a request spends in the API server before its engine's queue
sees it, in a replay on the engine model (and under ``--slots auto``, where it counts as queue)."""

from __future__ import annotations

import pytest

from sfqtui.core.engines import servers as servers_module
from sfqtui.core.engines.limits import EngineLimits
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS, EventColumns
from sfqtui.core.limits import LimitSettings
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError
from tests.core.test_engine_replay import MODEL, engine_rows, of_kind, trace
from tests.core.test_engine_replay_auto import EveryScrape, heavy_and_light

OVERHEAD = EngineModel(**{**MODEL.as_dict(), "request_overhead_ms": 125.0})


def test_a_request_joins_its_engine_s_queue_the_overhead_after_it_was_sent() -> None:
    # a reaches the engine at 0.125 and its first step (0.125 s alone) ends at 0.25; b, sent at 0.1, reaches it at
    # 0.225, during that step, and joins at its end. Together (0.25 s steps) b's 2 tokens end at 0.5 and 0.75, as do
    # a's second and third; a's fourth, alone again, at 0.875.
    rows = engine_rows(trace([("a", "A", 0.0, 0, 4), ("b", "B", 0.1, 0, 2)]), slots=2, model=OVERHEAD)
    assert of_kind(rows, "dispatch") == [(0.0, "a"), (0.1, "b")]
    assert of_kind(rows, "start") == [(0.125, "a"), (0.25, "b")]
    assert of_kind(rows, "complete") == [(0.75, "b"), (0.875, "a")]


def test_a_request_that_comes_as_a_step_ends_takes_the_place_it_frees() -> None:
    # a (1 token) ends at 0.25 (0.125 + 0.125); b, sent at 0.125, reaches the engine then and takes a's place at once.
    one_place = EngineModel(**{**OVERHEAD.as_dict(), "max_num_seqs": 1})
    rows = engine_rows(trace([("a", "A", 0.0, 0, 1), ("b", "B", 0.125, 0, 1)]), slots=2, model=one_place)
    assert of_kind(rows, "start") == [(0.125, "a"), (0.25, "b")]
    assert of_kind(rows, "complete") == [(0.25, "a"), (0.375, "b")]


def test_no_overhead_is_the_model_as_before() -> None:
    requests = trace([("a", "A", 0.0, 8, 3), ("b", "B", 0.0, 0, 2), ("c", "A", 0.1, 0, 1)])
    assert engine_rows(requests, 3, EngineModel(**{**MODEL.as_dict(), "request_overhead_ms": 0.0})) == engine_rows(requests, 3)


def test_a_negative_overhead_is_refused() -> None:
    with pytest.raises(InputError, match="request-overhead-ms"):
        EngineModel(request_overhead_ms=-1.0)


def _auto(requests: Trace, overhead_ms: float) -> EventColumns:
    model = EngineModel(max_num_seqs=6, decode_ms_per_token=20, batch_slowdown=0.1, request_overhead_ms=overhead_ms)
    return Replay(requests, ReplayConfig(slots=2, engine=EngineSettings(model, engines=2, auto=LimitSettings()))).run_all()


def test_under_auto_the_requests_on_their_way_count_and_skipped_scrapes_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = heavy_and_light(5.0)
    parked = _auto(requests, 300.0)
    monkeypatch.setattr(servers_module, "EngineLimits", EveryScrape)
    every = _auto(requests, 300.0)
    monkeypatch.setattr(servers_module, "EngineLimits", EngineLimits)
    assert (parked.t, parked.kind, parked.req, parked.upstream, parked.limit) == (every.t, every.kind, every.req, every.upstream, every.limit)
    assert sum(1 for k in parked.kind if KINDS[k] == "complete") == len(requests)
    # 300 ms on their way, over the queue target at the pace heavy sends: the limits hold more of them back.
    assert _highest_limit(parked) < _highest_limit(_auto(requests, 0.0))


def _highest_limit(events: EventColumns) -> int:
    assert events.limit is not None
    return max(limit for limit, kind in zip(events.limit, events.kind) if KINDS[kind] == "limit")
