"""``--slots auto`` in a replay on the engine model: the proxy's slot controller, fed each
engine's running, waiting and KV use every SCRAPE_S, keeps the engine's queue near empty,
so a light user no longer waits behind a heavy one's requests in the engine's FCFS queue."""

from __future__ import annotations

from collections import defaultdict

import pytest

from sfqtui.core.analysis.engine_waits import EngineWaits, quantile
from sfqtui.core.engines import servers as servers_module
from sfqtui.core.engines.limits import EngineLimits
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.modelled import ModelledEngine
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import KINDS, REASONS, EventColumns
from sfqtui.core.limits import REASONS as CONTROLLER_REASONS
from sfqtui.core.limits import LimitController, LimitSettings
from sfqtui.core.limits.slots import SCRAPE_S, parse_slots
from sfqtui.core.log.rows import rows_from_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace

MODEL = EngineModel(max_num_seqs=6, decode_ms_per_token=20, batch_slowdown=0.1)


def heavy_and_light(seconds: float = 20.0) -> Trace:
    """'heavy' sends 8 requests a second, more than the engine serves (about 6); 'light' 2. 32 tokens each."""
    rows = [(f"h{k:04d}", "heavy", k / 8) for k in range(int(seconds * 8))] + [(f"l{k:04d}", "light", k / 2 + 0.01) for k in range(int(seconds * 2))]
    rows.sort(key=lambda r: r[2])
    n = len(rows)
    return Trace([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], input_tokens=[100] * n, output_tokens=[32] * n,
                 cost=[1.0] * n)


def replayed(requests: Trace, slots: int, auto: LimitSettings | None = None) -> EventColumns:
    return Replay(requests, ReplayConfig(slots=slots, engine=EngineSettings(MODEL, auto=auto))).run_all()


def light_p90_to_start(requests: Trace, slots: int, auto: LimitSettings | None = None) -> float:
    waits = EngineWaits()
    waits.feed(rows_from_replay(replayed(requests, slots, auto), requests, "sfq"))
    found = quantile(waits.users["light"].to_start, 0.9)
    assert found is not None
    return found


def test_auto_keeps_the_engine_s_queue_short_so_light_does_not_wait_behind_heavy() -> None:
    requests = heavy_and_light()
    at_the_places = light_p90_to_start(requests, 6)
    above = light_p90_to_start(requests, 24)
    auto = light_p90_to_start(requests, 2, LimitSettings())
    assert above > 5 * at_the_places  # light queues in the engine behind up to 18 of heavy's requests
    assert auto < 2 * at_the_places + 0.5


def test_limit_rows_say_each_change_and_stay_within_the_maximum() -> None:
    requests = heavy_and_light(5.0)
    columns = replayed(requests, 2, LimitSettings(maximum=4))
    assert columns.limit is not None and columns.reason is not None and columns.upstream is not None
    limits = [(t, lim, REASONS[why]) for t, kind, lim, why in zip(columns.t, columns.kind, columns.limit, columns.reason) if KINDS[kind] == "limit"]
    assert limits[0] == (0.0, 2, "start")  # the first limit, at the first event
    assert all(1 <= lim <= 4 for _, lim, _ in limits) and any(lim == 4 for _, lim, _ in limits)
    assert all(abs(t / SCRAPE_S - round(t / SCRAPE_S)) < 1e-9 for t, _, _ in limits[1:])  # changes come from scrapes
    inflight, most = 0, 0
    for kind in columns.kind:
        inflight += {"dispatch": 1, "complete": -1}.get(KINDS[kind], 0)
        most = max(most, inflight)
    assert most <= 4


def test_the_engine_s_queue_stays_near_empty_under_auto() -> None:
    requests = heavy_and_light(10.0)
    columns = replayed(requests, 2, LimitSettings())
    queued: dict[int, int] = defaultdict(int)
    at_scrapes = []
    last_scrape = -1
    for t, kind, engine in zip(columns.t, columns.kind, columns.upstream or []):
        name = KINDS[kind]
        if name == "dispatch":
            queued[engine] += 1
        elif name == "start":
            queued[engine] -= 1
        k = int(t / SCRAPE_S)
        if k != last_scrape:
            at_scrapes.append(queued[0])
            last_scrape = k
    at_scrapes.sort()
    assert at_scrapes[int(0.9 * len(at_scrapes))] <= 1


def test_a_replay_under_auto_is_the_same_every_time() -> None:
    requests = heavy_and_light(3.0)
    first, second = replayed(requests, 2, LimitSettings()), replayed(requests, 2, LimitSettings())
    assert (first.t, first.kind, first.req, first.limit) == (second.t, second.kind, second.req, second.limit)


def test_limit_rows_code_every_reason_the_controller_gives() -> None:
    assert REASONS == CONTROLLER_REASONS


def test_slots_parse_as_the_proxy_takes_them() -> None:
    assert parse_slots("6") == (6, None)
    assert parse_slots("auto") == (None, LimitSettings())
    assert parse_slots("auto:12") == (None, LimitSettings(maximum=12))


class EveryScrape(EngineLimits):
    """Evaluates every scrape, every engine (no engine is ever quiet): what the replay did before it parked them."""

    def _holds(self, engine: ModelledEngine, controller: LimitController) -> bool:
        return False


def test_scrapes_that_cannot_change_a_limit_are_skipped_and_the_log_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, int] = defaultdict(int)
    change = EngineLimits.change

    def counted(self: EngineLimits, now: float, busy: bool) -> list[tuple[int, int, str]]:
        calls[type(self).__name__] += 1
        return change(self, now, busy)

    monkeypatch.setattr(EngineLimits, "change", counted)
    light = Trace([f"r{k}" for k in range(60)], ["a", "b"] * 30, [float(k) for k in range(60)], input_tokens=[100] * 60,
                  output_tokens=[32] * 60, cost=[1.0] * 60)
    for requests, maximum in ((heavy_and_light(5.0), 256), (light, 256), (heavy_and_light(5.0), 4)):
        config = ReplayConfig(slots=2, engine=EngineSettings(EngineModel(max_num_seqs=6), engines=2, auto=LimitSettings(maximum=maximum)))
        parked = Replay(requests, config).run_all()
        monkeypatch.setattr(servers_module, "EngineLimits", EveryScrape)
        every = Replay(requests, config).run_all()
        monkeypatch.setattr(servers_module, "EngineLimits", EngineLimits)
        assert (parked.t, parked.kind, parked.req, parked.upstream, parked.limit, parked.reason) == (
            every.t, every.kind, every.req, every.upstream, every.limit, every.reason)
        counts = calls["EngineLimits"], calls["EveryScrape"]
        calls.clear()
        assert counts[0] < counts[1], counts
        if requests is light:  # the engines keep room: the scrapes park between requests
            assert counts[0] < counts[1] / 2, counts
        if maximum == 4:  # the limits reach their maximum, so touches that leave an engine's running as it was stir nothing
            assert counts[0] < counts[1] / 4, counts
