"""`--slots auto`: the proxy in front of the emulated engine (`sfqtui engine`), with limits that follow each upstream."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import polars as pl
import pyarrow as pa
import pytest
from httpx_sse import connect_sse
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from sfqtui.attach.stream import EventStream
from sfqtui.attach.stream_log import StreamLogWriter
from sfqtui.cli.app import app
from sfqtui.core.analysis.audit import audit
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.limits import LimitSettings
from sfqtui.emulator.server import EngineServer
from sfqtui.protocol import LIMIT
from sfqtui.trace.eventlog import log_rows, read_log
from tests.fake_upstream import FakeUpstream, ServerThread, closed_port, fake_server
from tests.proxy_fixtures import KEY_OF, TLS, http_get, openai_http, openai_sync_http, running_group, running_proxy, state, wait_for, write_keys

NAME = "emulated-auto"


@contextlib.contextmanager
def running_engine(**model: Any) -> Iterator[ServerThread]:
    with ServerThread(EngineServer(EngineModel(**model), NAME)) as server:
        yield server


@contextlib.contextmanager
def load(url: str, clients: int, max_tokens: int, user: str = "bob") -> Iterator[list[Any]]:
    """``clients`` closed-loop clients (each sends its next request when its last is answered) until the block ends; their answers or errors."""
    results: list[Any] = []
    stop = threading.Event()

    async def client(llm: openai.AsyncOpenAI) -> None:
        while not stop.is_set():
            try:
                results.append(await llm.completions.create(model=NAME, prompt="four words of prompt", max_tokens=max_tokens))
            except openai.APIError as exc:
                results.append(exc)

    async def clients_() -> None:
        async with openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, timeout=30) as llm:
            await asyncio.gather(*(client(llm) for _ in range(clients)))

    thread = threading.Thread(target=asyncio.run, args=(clients_(),), daemon=True)
    thread.start()
    try:
        yield results
    finally:
        stop.set()
        thread.join(timeout=30)


def limit_events(url: str) -> list[dict[str, Any]]:
    """The limit events the proxy holds (SSE type limit, their seq as id)."""
    upto = state(url)["seq"]
    events: list[dict[str, Any]] = []
    with httpx.Client(verify=TLS, timeout=10) as client, connect_sse(client, "GET", f"{url}/v1/sfq/events") as source:
        for sse in source.iter_sse():
            if sse.event not in ("message", LIMIT):
                continue
            event = sse.json()
            if sse.event == LIMIT:
                assert event["kind"] == LIMIT and str(event["seq"]) == sse.id
                events.append(event)
            if event["seq"] >= upto:
                break
    return events


def limit_gauges(url: str) -> dict[str, float]:
    text = http_get(f"{url}/metrics").text
    return {sample.labels["upstream"]: sample.value for family in text_string_to_metric_families(text)
            if family.name == "sfqtui_upstream_limit" for sample in family.samples}


@dataclass
class Settled:
    """What one run shows: 12 clients through a proxy with --slots auto (from 2) in front of the emulated engine
    with 4 places, until the limit settles at 4 + 1, while a follower records the stream."""

    upstream: str  # the engine's host:port, as the proxy labels it
    snapshot: dict[str, Any]  # the state once the limit is 5
    gauges: dict[str, float]  # sfqtui_upstream_limit then
    answers: list[Any]
    events: list[dict[str, Any]]  # the limit events, read once the load has stopped
    log: pl.DataFrame  # the follower's recording


@pytest.fixture(scope="module")
def settled(tmp_path_factory: pytest.TempPathFactory) -> Settled:
    """One run read by the three tests marked SETTLED (it is the same run for each of them)."""
    folder = tmp_path_factory.mktemp("settled")
    keys, saved = write_keys(folder / "keys.toml"), folder / "live.parquet"
    with (running_engine(max_num_seqs=4, decode_ms_per_token=5.0, batch_slowdown=0.0) as engine,
          running_proxy(engine.url, keys, limits=LimitSettings(), slots=2) as proxy):
        stream = EventStream(proxy.url, backoff_s=(0.05, 0.2))
        seqs: list[int] = []

        def follow() -> None:
            with StreamLogWriter(saved, stream.base_url) as writer:
                for item in stream:
                    if isinstance(item, pa.Table):
                        seqs.extend(item["seq"].to_pylist())
                    writer.write(item)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        with load(proxy.url, clients=12, max_tokens=20) as answers:
            wait_for(lambda: [row["limit"] for row in state(proxy.url).get("limits", [])] == [5], timeout=15, what="the limit at 4 + 1")
            snapshot = state(proxy.url)
            gauges = limit_gauges(proxy.url)
        events = limit_events(proxy.url)
        wait_for(lambda: seqs[-1:] == [state(proxy.url)["seq"]], what="the follower to catch up")
        stream.close()
        follower.join(5)
    df, _ = read_log(saved)
    return Settled(engine.url.removeprefix("http://"), snapshot, gauges, answers, events, df)


SETTLED = pytest.mark.xdist_group("test_proxy_auto_slots_settled")  # the tests that read settled, on one worker: one run


@SETTLED
def test_the_limit_settles_one_over_the_engine_s_places_and_shows_everywhere(settled: Settled) -> None:
    label, snapshot, answers = settled.upstream, settled.snapshot, settled.answers
    assert all(isinstance(a, openai.types.Completion) for a in answers) and len(answers) > 12
    (row,) = snapshot["limits"]
    assert row["upstream"] == label and row["source"] == "metrics" and row["maximum"] == 256 and snapshot["slots"] == 5
    assert row["running"] is not None and row["running"] <= 4
    assert settled.gauges == {label: 5.0}


@SETTLED
def test_limit_events_say_why(settled: Settled) -> None:
    first, *events = settled.events
    assert first["limit"] == 2 and first["reason"] == "start"  # the first limit is an event too, before any request
    assert events[0]["limit"] == 4 and events[0]["reason"] == "room"  # from 2: room, doubled
    assert {e["reason"] for e in events} <= {"room", "queue"} and events[-1]["limit"] == 5
    assert all(e["upstream"] == settled.upstream and e["request_id"] is None and e["user"] is None for e in events)


@SETTLED
def test_a_recording_of_the_stream_keeps_the_limit_rows_and_audits_clean(settled: Settled) -> None:
    df = settled.log
    limits = df.filter(pl.col("kind") == "limit")
    assert df["seq"].to_list() == list(range(df.height))  # no hole where the limit rows are
    assert limits.height >= 2 and limits["limit"].to_list()[-1] == 5
    assert set(limits["upstream"].to_list()) == {settled.upstream}
    report = audit(log_rows(df))
    assert report.violation_count == 0, report.violations


def test_the_maximum_holds(keys_path: Path) -> None:
    with (running_engine(max_num_seqs=8, decode_ms_per_token=5.0) as engine,
          running_proxy(engine.url, keys_path, limits=LimitSettings(maximum=3), slots=2) as proxy):
        with load(proxy.url, clients=10, max_tokens=20):
            wait_for(lambda: state(proxy.url)["limits"][0]["reason"] == "maximum", timeout=15, what="the maximum")
            assert engine.server.engine.scheduler.running.__len__() <= 3  # type: ignore[attr-defined]  # an EngineServer
        assert state(proxy.url)["slots"] == 3


def test_a_full_engine_queue_backs_off_and_the_requests_still_get_answers(keys_path: Path) -> None:
    # The engine runs 2 at a time and queues 1: any more is a 503.
    with (running_engine(max_num_seqs=2, max_queued=1, decode_ms_per_token=5.0) as engine,
          running_proxy(engine.url, keys_path, limits=LimitSettings(start=6), slots=6) as proxy):
        with load(proxy.url, clients=8, max_tokens=10) as answers:
            wait_for(lambda: len(answers) >= 40, timeout=20, what="40 answers")
        events = limit_events(proxy.url)
        errors = http_get(f"{proxy.url}/metrics").text
    assert all(isinstance(a, openai.types.Completion) for a in answers)
    assert [(e["reason"], e["limit"]) for e in events[:2]] == [("start", 6), ("backoff", 3)]
    assert 'sfqtui_upstream_errors_total{code="busy"' in errors


def test_one_upstream_failing_shrinks_only_its_own_limit(keys_path: Path) -> None:
    dead = closed_port()
    with (running_engine(max_num_seqs=4, decode_ms_per_token=5.0, batch_slowdown=0.0) as engine,
          running_proxy(engine.url, keys_path, limits=LimitSettings(), slots=4, upstreams=(engine.url, dead)) as proxy):
        with load(proxy.url, clients=12, max_tokens=20) as answers:
            limits = wait_for(lambda: (rows := state(proxy.url)["limits"]) and [r["limit"] for r in rows] == [5, 1] and rows,
                              timeout=15, what="5 and 1")
        assert all(isinstance(a, openai.types.Completion) for a in answers)
    assert [r["source"] for r in limits] == ["metrics", "probing"] and limits[1]["reason"] == "stale"


def test_an_upstream_without_metrics_is_sized_from_latency(keys_path: Path) -> None:
    fake = FakeUpstream(latency_s=0.05)
    with fake_server(fake) as upstream, running_proxy(upstream.url, keys_path, limits=LimitSettings(), slots=2) as proxy:
        wait_for(lambda: state(proxy.url)["limits"][0]["source"] == "latency", what="latency")
        answer = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{proxy.url}/v1", api_key=KEY_OF["bob"], max_retries=0).completions.create(
            model="m", prompt="hello", max_tokens=4)
        assert answer.choices[0].text == "echo: hello"


@pytest.mark.parametrize(("slots", "extra", "message"), [
    ("auto:0", [], "--slots 'auto:0': the maximum must be at least 1"),
    ("auto:x", [], "--slots 'auto:x': expected auto or auto:MAX with MAX a whole number of at least 1 (the most slots one upstream gets)"),
    ("auto:", [], "--slots 'auto:': expected auto or auto:MAX"),
    ("many", [], "--slots 'many': expected a whole number of at least 1, auto or auto:MAX"),
    ("auto", ["--limit-from", "guess"], "--limit-from 'guess': expected one of auto, metrics, latency"),
])
def test_bad_slots_are_one_line_and_exit_2(slots: str, extra: list[str], message: str, keys_path: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["proxy", "--upstream", "http://127.0.0.1:9", "--keys", str(keys_path), "--slots", slots, *extra])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"sfqtui: error: {message}")


def test_metrics_required_from_an_upstream_without_them_is_refused(keys_path: Path, cli: CliRunner) -> None:
    with fake_server(FakeUpstream()) as upstream:
        result = cli.invoke(app, ["proxy", "--upstream", upstream.url, "--keys", str(keys_path), "--slots", "auto",
                                  "--limit-from", "metrics"])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert f"{upstream.url}/metrics exports none of vLLM's, SGLang's or llama.cpp's engine metrics" in result.stderr


def test_a_group_s_pool_is_the_sum_of_its_upstreams_limits(keys_path: Path, store: Any) -> None:
    with (running_engine(max_num_seqs=4, decode_ms_per_token=5.0, batch_slowdown=0.0) as engine,
          running_group(engine.url, keys_path, store.url, 2, limits=LimitSettings(), slots=2) as replicas):
        with load(replicas[0].url, clients=8, max_tokens=20) as first, load(replicas[1].url, clients=8, max_tokens=20, user="carol") as second:
            # Each replica runs its own controller on the same engine; the limit moves by one as the engine's queue
            # comes and goes, so the claim is read from one state at a time: the pool is its upstream's limit, 4 + 1.
            wait_for(lambda: all(pool_is_the_limit(state(r.url), 5) for r in replicas), timeout=20,
                     what="the pool at 4 + 1 on both replicas, the sum of their limits")
        assert all(isinstance(a, openai.types.Completion) for a in first + second)


def pool_is_the_limit(seen: dict[str, Any], slots: int) -> bool:
    return seen.get("slots") == slots == sum(row["limit"] for row in seen["limits"])
