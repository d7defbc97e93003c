"""A lone proxy runs the policies of semantics §15 with --scheduler (an operator's live A/B); a group stays SFQ."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import httpx
import pytest

from sfqtui.errors import InputError
from sfqtui.proxy.attributes import NO_POLICY, RequestPolicy, request_policy
from sfqtui.proxy.keys import load_keys
from sfqtui.proxy.settings import ProxySettings
from tests.proxy_fixtures import KEY_OF, TLS, read_events, running_proxy, state, wait_for


async def send(client: httpx.AsyncClient, url: str, user: str, prompt: str, **extra: object) -> int:
    headers = {"authorization": f"Bearer {KEY_OF[user]}"}
    body = {"model": "fake-model", "prompt": prompt, "max_tokens": 8}
    if "priority" in extra:
        body["priority"] = extra["priority"]
    if "flow" in extra:
        headers["x-gateway-inference-fairness-id"] = str(extra["flow"])
    response = await client.post(f"{url}/v1/completions", json=body, headers=headers, timeout=30)
    return response.status_code


def queued_are(url: str, n: int) -> bool:
    return sum(u["queued"] for u in state(url)["users"]) == n


async def test_litellm_on_the_proxy_serves_the_lowest_priority_first(fake, keys_path: Path) -> None:
    upstream, upstream_url = fake
    with running_proxy(upstream_url, keys_path, slots=1, scheduler="litellm") as px:
        async with httpx.AsyncClient(verify=TLS) as client:
            blocker = asyncio.create_task(send(client, px.url, "alice", "[held] blocker"))
            await asyncio.to_thread(wait_for, lambda: state(px.url)["inflight"] == 1, what="the blocker to hold the slot")
            queued = []
            for n, (prompt, priority) in enumerate((("late five", 5), ("urgent zero", 0), ("middle three", 3)), 1):
                queued.append(asyncio.create_task(send(client, px.url, "bob", prompt, priority=priority)))
                await asyncio.to_thread(wait_for, partial(queued_are, px.url, n), what="the request to queue")
            upstream.release("[held] blocker")
            assert await asyncio.gather(blocker, *queued) == [200] * 4
        events = read_events(px.url)
    dispatched = [e["request_id"] for e in events if e["kind"] == "dispatch"]
    assert dispatched == ["r0", "r2", "r3", "r1"]  # the blocker, then priorities 0, 3, 5
    assert {e["scheduler"] for e in events} == {"litellm"}


def test_a_group_stays_sfq(keys_path: Path) -> None:
    with pytest.raises(InputError, match=r"a group of replicas \(--state\) shares one SFQ"):
        ProxySettings(upstreams=("http://127.0.0.1:9",), slots=2, keys=load_keys(keys_path), state_url="redis://127.0.0.1:6379/0",
                      scheduler="llm-d")
    with pytest.raises(InputError, match="not available here: drr"):
        ProxySettings(upstreams=("http://127.0.0.1:9",), slots=2, keys=load_keys(keys_path), scheduler="drr")


def test_a_request_says_its_priority_flow_and_class() -> None:
    assert request_policy({}, {"priority": 3}) == RequestPolicy(3)
    assert request_policy({"x-sfqtui-priority": "-2", "x-gateway-inference-fairness-id": "team-a", "x-sfqtui-class": "gold"}, {}) == \
        RequestPolicy(-2, "team-a", "gold")
    assert request_policy({}, {"priority": 0}) == RequestPolicy(0)
    # Not an integer: as if unsaid (priority 0 to the scheduler, null in a recording).
    assert request_policy({}, {"priority": "high"}) == request_policy({}, {"priority": 1.5}) == request_policy({}, {}) == NO_POLICY
