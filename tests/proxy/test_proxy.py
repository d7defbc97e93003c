"""End to end: the official openai client, several users at once, through the proxy to the fake upstream."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import openai
import pyarrow as pa
import pytest

from sfqtui.attach.stream import EventStream, Gap, Status
from sfqtui.core.analysis.audit import audit
from sfqtui.core.log.rows import LogRows
from sfqtui.proxy.prompt import output_cap, prompt_tokens
from sfqtui.proxy.urls import base_url
from sfqtui.trace.load import load_trace
from tests.fake_upstream import answer_text, prompt_of
from tests.proxy_fixtures import KEY_OF, by_request, http_get, openai_http, read_events, running_proxy, state, wait_for

USERS = ("alice", "bob", "carol")


async def ask(client: openai.AsyncOpenAI, user: str, n: int) -> dict[str, Any]:
    """One request of a mix: chat or completions, streamed or not, usage asked for or not."""
    prompt = f"{user} asks question {n} about fairness"
    chat, stream, usage = n % 2 == 0, n % 3 != 0, n % 4 == 1
    body: dict[str, Any] = {"model": "fake-model", "max_tokens": 32 + n}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    extra = {"stream": True, "stream_options": {"include_usage": True}} if stream and usage else {"stream": True} if stream else {}
    create = client.chat.completions.create if chat else client.completions.create
    result = await create(**body, **extra)
    if not stream:
        text = result.choices[0].message.content if chat else result.choices[0].text
        return {"expected": answer_text(body), "text": text, "usage": result.usage, "stream": False, "asked": False}
    pieces, usages, empty = [], [], 0
    async for chunk in result:
        if chunk.usage is not None:
            usages.append(chunk.usage)
        if not chunk.choices:
            empty += 1
            continue
        piece = chunk.choices[0].delta.content if chat else chunk.choices[0].text
        pieces.append(piece or "")
    return {"expected": answer_text(body), "text": "".join(pieces), "usages": usages, "empty": empty, "stream": True, "asked": usage}


def follow(stream: EventStream, into: list[Any]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.extend(stream), daemon=True)
    thread.start()
    return thread


def event_rows(items: list[Any]) -> list[dict[str, Any]]:
    return [row for item in items if isinstance(item, pa.Table) for row in item.to_pylist()]


def log_rows(events: list[dict[str, Any]]) -> LogRows:
    def column(name: str) -> list[Any]:
        return [e.get(name) for e in events]

    return LogRows(scheduler="sfq", seq=column("seq"), t=column("t"), kind=column("kind"), user=column("user"),
                   request_id=column("request_id"), cost=column("cost"), v=column("v"), meter=column("meter"),
                   deficit=column("deficit"), weight=column("weight"))


async def test_many_users_at_once_each_answered_once_and_fairly(fake, keys_path: Path, tmp_path: Path) -> None:
    upstream, upstream_url = fake
    record = tmp_path / "traffic.parquet"
    with running_proxy(upstream_url, keys_path, slots=2, record=record) as px:
        items: list[Any] = []
        watcher = EventStream(px.url)
        thread = follow(watcher, items)
        clients = {u: openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{px.url}/v1", api_key=KEY_OF[u], max_retries=0) for u in USERS}
        jobs = [ask(clients[u], u, n) for n in range(8) for u in USERS]
        answers = await asyncio.wait_for(asyncio.gather(*jobs), 30)
        final = state(px.url)
        wait_for(lambda: (event_rows(items) or [{"seq": None}])[-1]["seq"] == final["seq"], what="the stream to catch up")
        watcher.close()
        thread.join(5)
        metrics = http_get(f"{px.url}/metrics").text
    for answer in answers:
        assert answer["text"] == answer["expected"]
        if answer["stream"] and answer["asked"]:
            assert len(answer["usages"]) == 1 and answer["usages"][0].completion_tokens == len(answer["expected"].split(" "))
        elif answer["stream"]:
            assert answer["usages"] == [] and answer["empty"] == 0, "the usage chunk went to a client that did not ask for it"
        else:
            assert answer["usage"].completion_tokens == len(answer["expected"].split(" "))
    sent = Counter(prompt_of(body) for body in upstream.seen if "about fairness" in prompt_of(body))
    assert len(sent) == len(jobs) and set(sent.values()) == {1}, "a request was sent upstream twice"
    streamed = [body for body in upstream.seen if body.get("stream") and "fairness" in str(body)]
    assert streamed and all(body["stream_options"]["include_usage"] is True for body in streamed)

    assert [i.state for i in items if isinstance(i, Status)] == ["connecting", "live"]
    assert not any(isinstance(i, Gap) for i in items)
    events = event_rows(items)
    assert [e["seq"] for e in events] == list(range(final["seq"] + 1))
    lifecycles = by_request(events)
    assert len(lifecycles) == len(jobs)
    assert all(kinds == ["arrive", "dispatch", "complete"] for kinds in lifecycles.values())
    report = audit(log_rows(events))
    assert report.violation_count == 0, report.violations
    dispatches = [e for e in events if e["kind"] == "dispatch"]
    assert all(e["ratio"] is not None and e["est_output"] is not None for e in dispatches)
    completes = [e for e in events if e["kind"] == "complete"]
    assert all(e["output_tokens"] is not None for e in completes)
    assert {e["user"]: e["weight"] for e in dispatches}["alice"] == 2.0

    for user in USERS:
        charged = sum(e["cost"] for e in dispatches if e["user"] == user)
        line = next(line for line in metrics.splitlines() if line.startswith(f'sfqtui_dispatched_cost_total{{user="{user}"}}'))
        assert float(line.split()[-1]) == pytest.approx(charged)
    assert "sfqtui_wait_seconds_bucket" in metrics and "sfqtui_worst_meter_lead" in metrics

    trace = load_trace(record).trace
    assert len(trace) == len(jobs)
    assert sorted(trace.output_tokens) == sorted(e["output_tokens"] for e in completes)  # type: ignore[arg-type]  # a recorded trace has output_tokens


async def test_the_ratio_learns_from_actual_output(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, slots=1) as px:
        client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{px.url}/v1", api_key=KEY_OF["bob"], max_retries=0)
        for n in range(3):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"short {n}"}], max_tokens=100)
        events = read_events(px.url)
    ratios = [e["ratio"] for e in events if e["kind"] == "dispatch"]
    # Each answer is 3 words out of a cap of 100: after the first completion the ratio drops to 0.03.
    assert ratios == [1.0, 0.03, 0.03]
    costs = [e["cost"] for e in events if e["kind"] == "dispatch"]
    assert costs[0] == 2 + 2.0 * 100 and costs[1] == pytest.approx(2 + 2.0 * 3)


@pytest.mark.parametrize("asked", [False, True])
async def test_a_ragged_stream_is_relayed_whole_and_its_usage_only_when_asked(fake, keys_path: Path, asked: bool) -> None:
    """The upstream sends \\r\\n line ends three bytes at a time: events are still passed on
    whole, and the usage chunk (cut across many pieces) is still found, kept or dropped."""
    _, upstream_url = fake
    prompt = "[ragged] three small words"
    options = {"stream_options": {"include_usage": True}} if asked else {}
    with running_proxy(upstream_url, keys_path) as px:
        client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{px.url}/v1", api_key=KEY_OF["bob"], max_retries=0)
        stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}], max_tokens=20,
                                                      stream=True, **options)  # type: ignore[call-overload]  # options: stream_options or nothing
        chunks = [chunk async for chunk in stream]
        events = read_events(px.url)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == answer_text({"messages": [{"role": "user", "content": prompt}]})
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(usages) == (1 if asked else 0) and all(not c.choices for c in chunks if c.usage is not None)
    assert [e["output_tokens"] for e in events if e["kind"] == "complete"] == [len(text.split(" "))]


async def test_metrics_cap_user_labels(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, metrics_users=1) as px:
        for user in USERS:
            client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{px.url}/v1", api_key=KEY_OF[user], max_retries=0)
            await client.completions.create(model="m", prompt=f"{user} " * (10 if user == "carol" else 1), max_tokens=8)
        first = http_get(f"{px.url}/metrics").text
        second = http_get(f"{px.url}/metrics").text
    assert 'sfqtui_dispatched_cost_total{user="alice"}' in first and 'user="other"' in first
    # After a scrape the label goes to the user with the most cost dispatched.
    assert 'sfqtui_dispatched_cost_total{user="carol"}' in second and 'sfqtui_dispatched_cost_total{user="alice"}' not in second


def test_prompt_tokens_are_approximated_as_documented() -> None:
    assert prompt_tokens({"messages": [{"role": "user", "content": "x" * 10}, {"role": "system", "content": [{"type": "text", "text": "y" * 6}]}]}) == 4
    assert prompt_tokens({"prompt": [1, 2, 3, 4, 5]}) == 5
    assert prompt_tokens({"prompt": ["abcd", "efgh"]}) == 2
    assert prompt_tokens({"prompt": ""}) == 1
    assert output_cap({"max_tokens": 50, "n": 2}) == 100
    assert output_cap({"max_completion_tokens": 7, "max_tokens": 50}) == 7
    assert output_cap({"max_tokens": True}) is None


def test_upstream_urls_are_taken_with_or_without_v1() -> None:
    assert base_url("http://gpu-1:8000/v1/") == base_url("http://gpu-1:8000") == "http://gpu-1:8000"
    assert base_url("https://host/prefix/v1") == "https://host/prefix"
    assert base_url("http://[::1]:8000/v1?x=1") == "http://[::1]:8000"
    with pytest.raises(ValueError, match="expected an http"):
        base_url("ftp://host")
