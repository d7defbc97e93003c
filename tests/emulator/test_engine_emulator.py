"""The emulated vLLM engine (`sfqtui engine`), served on loopback and asked with the official openai client."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sfqtui.core.engines.model import EngineModel
from sfqtui.emulator.server import EngineServer
from sfqtui.protocol import ENGINE_START_HEADER
from tests.fake_upstream import ServerThread
from tests.proxy_fixtures import KEY_OF, TLS, openai_sync_http, running_proxy, wait_for

NAME = "emulated-test"
GATE = 10_000  # tokens: a request that holds the engine's KV until the test lets it go
PROMPT = "sixteen chars!!!"  # 4 prompt tokens


@contextlib.contextmanager
def running_engine(**model: Any) -> Iterator[ServerThread]:
    with ServerThread(EngineServer(EngineModel(**model), NAME)) as server:
        yield server


def client(url: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(http_client=openai_sync_http(), base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=10)


def metrics(url: str, http: httpx.Client | None = None) -> dict[str, float]:
    """Each sample of /metrics whose labels are the engine's, by name (through ``http``, a client kept open, when given)."""
    samples = {}
    response = http.get(f"{url}/metrics") if http else httpx.get(f"{url}/metrics", verify=TLS)
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            assert sample.labels.get("model_name") == NAME and sample.labels.get("engine") == "0"
            if set(sample.labels) == {"model_name", "engine"}:
                samples[sample.name] = sample.value
    return samples


def in_threads(calls: list[Callable[[], Any]], between: Callable[[int], None] | None = None,
               then: Callable[[], None] | None = None) -> list[Any]:
    """Run each call in a thread of its own (after ``between(k)`` for the k-th; ``then()`` once all started), and their results."""
    results: list[Any] = [None] * len(calls)

    def run(k: int) -> None:
        try:
            results[k] = calls[k]()
        except Exception as exc:  # the test looks at it
            results[k] = exc

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for k, thread in enumerate(threads):
        if between is not None:
            between(k)
        thread.start()
    if then is not None:
        then()
    for thread in threads:
        thread.join(timeout=20)
    return results


def chat(llm: openai.OpenAI, max_tokens: int) -> Callable[[], Any]:
    """A request to make later (one client for all the threads: making one takes long enough to reorder their arrivals)."""
    return lambda: llm.chat.completions.create(model=NAME, messages=[{"role": "user", "content": PROMPT}], max_tokens=max_tokens)


def test_answers_with_usage_streamed_or_not() -> None:
    with running_engine(decode_ms_per_token=1.0) as server:
        llm = client(server.url)
        assert [m.id for m in llm.models.list().data] == [NAME]
        answer = llm.chat.completions.create(model=NAME, messages=[{"role": "user", "content": PROMPT}], max_tokens=7)
        assert answer.model == NAME and answer.choices[0].finish_reason == "length"
        assert answer.choices[0].message.content is not None and len(answer.choices[0].message.content.split()) == 7
        assert answer.usage is not None and (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total_tokens) == (4, 7, 11)

        chunks = list(llm.chat.completions.create(model=NAME, messages=[{"role": "user", "content": PROMPT * 2}], max_tokens=5,
                                                  stream=True, stream_options={"include_usage": True}))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).split() == answer.choices[0].message.content.split()[:5]
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (8, 5)
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"

        plain = list(llm.completions.create(model=NAME, prompt="twelve chars", max_tokens=3, stream=True))
        assert len(plain) == 3 and all(c.usage is None for c in plain)
        whole = llm.completions.create(model=NAME, prompt=[1, 2, 3, 4, 5, 6], max_tokens=2)
        assert whole.usage is not None and (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (6, 2)
        assert len(whole.choices[0].text.split()) == 2

        with pytest.raises(openai.NotFoundError):
            llm.chat.completions.create(model="another", messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.BadRequestError, match="KV"):
            llm.completions.create(model=NAME, prompt="x", max_tokens=100_000)


def test_a_full_batch_queues_the_rest_first_come_first_served() -> None:
    # A round of 60 steps takes 1.8 s: longer than six requests take to arrive on a loaded machine, so none has
    # finished when the last arrives.
    with running_engine(max_num_seqs=2, decode_ms_per_token=30.0, batch_slowdown=0.0) as server:
        llm = client(server.url)
        scheduler = server.server.engine.scheduler  # type: ignore[attr-defined]  # an EngineServer
        seen: list[tuple[float, float]] = []
        stop = threading.Event()

        def watch() -> None:
            with httpx.Client(verify=TLS) as http:
                while not stop.is_set():
                    sample = metrics(server.url, http)
                    seen.append((sample["vllm:num_requests_running"], sample["vllm:num_requests_waiting"]))
                    time.sleep(0.02)  # tens of samples in each round of 1.8 s

        def arrived(k: int) -> bool:
            return len(scheduler.admitted_order) + len(scheduler.waiting) >= k

        def all_arrived() -> None:
            wait_for(lambda: arrived(6), what="the six requests in the engine")
            sample = metrics(server.url)
            when_all_arrived.append((sample["vllm:num_requests_running"], sample["vllm:num_requests_waiting"]))

        when_all_arrived: list[tuple[float, float]] = []
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            answers = in_threads([chat(llm, 60) for _ in range(6)], lambda k: wait_for(lambda: arrived(k), what=f"request {k}"), all_arrived)
        finally:
            stop.set()
            watcher.join()
        assert all(a.usage.completion_tokens == 60 for a in answers)
        assert when_all_arrived == [(2.0, 4.0)]
        assert max(running for running, _ in seen) == 2
        assert list(scheduler.admitted_order) == list(range(6))
        after = metrics(server.url)
        assert after["vllm:request_queue_time_seconds_count"] == 6 and after["vllm:e2e_request_latency_seconds_count"] == 6
        # The middle two waited for a round of 60 steps of 30 ms, the last two for two, the first two not at all
        # (10.8 s, less the time they arrived after the first: some tens of ms each). Six rounds of waiting, as
        # many as the six ran: the engine's own run times (its e2e less its queue time) measure the rounds as a
        # loaded machine stretched them, so the waits are bounded by the runs of the same requests, with room
        # for one round stretched twice as much as the others.
        queued = after["vllm:request_queue_time_seconds_sum"]
        ran = after["vllm:e2e_request_latency_seconds_sum"] - queued
        assert 7.2 < queued <= 1.5 * ran, (queued, ran)
        assert after["vllm:num_requests_running"] == 0 and after["vllm:kv_cache_usage_perc"] == 0


def test_the_kv_budget_limits_the_batch() -> None:
    # Each request needs 4 + 20 tokens of KV: 50 hold two, whatever the six places.
    with running_engine(max_num_seqs=6, kv_tokens=50, decode_ms_per_token=10.0) as server:
        llm = client(server.url)
        seen: list[dict[str, float]] = []
        done = threading.Event()

        def watch() -> None:
            with httpx.Client(verify=TLS) as http:
                while not done.is_set():
                    seen.append(metrics(server.url, http))
                    time.sleep(0.005)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            answers = in_threads([chat(llm, 20) for _ in range(4)])
        finally:
            done.set()
            watcher.join()
        assert all(a.usage.completion_tokens == 20 for a in answers)
        assert max(s["vllm:num_requests_running"] for s in seen) == 2
        assert max(s["vllm:num_requests_waiting"] for s in seen) >= 1
        assert 0 < max(s["vllm:kv_cache_usage_perc"] for s in seen) <= 48 / 50


def test_a_full_queue_answers_503() -> None:
    with running_engine(max_num_seqs=1, max_queued=1, decode_ms_per_token=20.0) as server:
        llm = client(server.url)
        scheduler = server.server.engine.scheduler  # type: ignore[attr-defined]  # an EngineServer

        def after(k: int) -> None:
            wait_for(lambda: len(scheduler.admitted_order) + len(scheduler.waiting) >= min(k, 2), what="the first requests in the engine")

        first, second, third = in_threads([chat(llm, 30), chat(llm, 10), chat(llm, 10)], after)
        assert (first.usage.completion_tokens, second.usage.completion_tokens) == (30, 10)
        assert isinstance(third, openai.APIStatusError) and third.status_code == 503
        assert "queue is full" in third.message


def test_a_request_takes_longer_in_a_full_batch() -> None:
    """The engine's own account of each request (the time its steps took by the model) says how
    much longer six at once take; the clock only bounds it from below, as a busy host runs steps late."""
    model = EngineModel(max_num_seqs=6, decode_ms_per_token=10.0, batch_slowdown=1.0, kv_tokens=GATE + 1 + 23)
    with running_engine(**model.as_dict()) as server, httpx.Client(verify=TLS, timeout=10) as http:
        llm = client(server.url)
        scheduler = server.server.engine.scheduler  # type: ignore[attr-defined]  # an EngineServer
        started = time.monotonic()
        chat(llm, 20)()
        alone = time.monotonic() - started
        alone_model = metrics(server.url)["sfqtui:request_model_time_seconds_sum"]
        # 20 steps alone (the first one prefills the 4 prompt tokens).
        assert alone_model == pytest.approx(model.step_s(1, 4) + 19 * model.step_s(1, 0), rel=1e-9)
        assert alone >= alone_model
        # A gate holds the KV until the six wait behind it, so that they join the batch in one step.
        body = {"model": NAME, "messages": [{"role": "user", "content": "gate"}], "max_tokens": GATE, "stream": True}
        with http.stream("POST", f"{server.url}/v1/chat/completions", json=body) as gate:

            def let_go() -> None:
                wait_for(lambda: len(scheduler.waiting) == 6, what="the six behind the gate")
                gate.close()  # the engine frees a request whose client left

            in_batch = in_threads([chat(llm, 20) for _ in range(6)], then=let_go)
        assert all(answer.usage.completion_tokens == 20 for answer in in_batch), in_batch
        after = metrics(server.url)
        assert after["sfqtui:request_model_time_seconds_count"] == 7  # the gate, left unfinished, is not counted
        # Six at once: each step 1 + 1.0 * 5 = 6 times as long, for each of the six.
        each = (after["sfqtui:request_model_time_seconds_sum"] - alone_model) / 6
        assert each == pytest.approx(model.step_s(6, 6 * 4) + 19 * model.step_s(6, 0), rel=1e-9)
        assert each > 5.9 * alone_model


def test_the_sfqtui_proxy_serves_through_the_engine(keys_path: Path) -> None:
    with running_engine(decode_ms_per_token=1.0) as engine, running_proxy(engine.url, keys_path) as proxy:
        llm = client(proxy.url, KEY_OF["alice"])
        assert [m.id for m in llm.models.list().data] == [NAME]
        chunks = list(llm.chat.completions.create(model=NAME, messages=[{"role": "user", "content": PROMPT}], max_tokens=6,
                                                  stream=True, stream_options={"include_usage": True}))
        assert chunks[-1].usage is not None and (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (4, 6)
        answer = llm.completions.create(model=NAME, prompt=PROMPT, max_tokens=3)
        assert answer.usage is not None and answer.usage.completion_tokens == 3
        assert metrics(engine.url)["vllm:e2e_request_latency_seconds_count"] == 2


def test_each_answer_says_when_its_request_started_running() -> None:
    """The start header: a streamed answer's headers come when the request joins the batch
    (the second waits for the first's place), and both kinds carry the time it did."""
    body = {"model": NAME, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 20}
    with running_engine(max_num_seqs=1, decode_ms_per_token=10.0, batch_slowdown=0.0) as server, httpx.Client(verify=TLS, timeout=10) as http:
        url = f"{server.url}/v1/chat/completions"
        with http.stream("POST", url, json={**body, "stream": True}) as first:
            first_start = float(first.headers[ENGINE_START_HEADER])
            sent = time.time()
            with http.stream("POST", url, json={**body, "stream": True}) as second:
                heard = time.time()
                second_start = float(second.headers[ENGINE_START_HEADER])
                second.read()
            first.read()
        # 20 steps of 10 ms for the first before the second has the place; headers as it starts.
        assert second_start - first_start >= 0.19 and sent < second_start <= heard
        # Not streamed: the headers come when it starts too, the body 20 steps later.
        before = time.time()
        with http.stream("POST", url, json=body) as whole:
            heard = time.time()
            assert before <= float(whole.headers[ENGINE_START_HEADER]) <= heard
            assert json.loads(whole.read())["usage"]["completion_tokens"] == 20
        assert time.time() - heard >= 0.19
