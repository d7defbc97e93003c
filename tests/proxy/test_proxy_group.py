"""Replicas sharing one SFQ through a real Redis server (--state): one stream, one SFQ, one pool of slots."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from typer.testing import CliRunner

from sfqtui.attach.stream import EventStream
from sfqtui.attach.stream_log import StreamLogWriter
from sfqtui.cli.app import app
from sfqtui.core.analysis.audit import audit
from sfqtui.trace.eventlog import log_rows, read_log
from tests.proxy.test_proxy import log_rows as rows_of
from tests.proxy_fixtures import KEY_OF, KEYS, TLS, by_request, ended_events, openai_http, read_events, running_group, state, wait_for
from tests.tcp_relay import TcpRelay

USERS = ("alice", "bob", "carol")




async def ask(url: str, user: str, n: int, stream: bool = False, prompt: str = "") -> str:
    client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, timeout=30)
    body = {"model": "m", "messages": [{"role": "user", "content": prompt or f"{user} question {n} [slow]"}], "max_tokens": 2 + n % 3}
    if not stream:
        answer = await client.chat.completions.create(**body)  # type: ignore[call-overload]
        return str(answer.choices[0].message.content)
    pieces = [chunk.choices[0].delta.content or "" async for chunk in await client.chat.completions.create(**body, stream=True)  # type: ignore[call-overload]
              if chunk.choices]
    return "".join(pieces)


def raw_stream(url: str, upto: int) -> bytes:
    """The §7 frames one replica serves, as bytes, up to seq ``upto``."""
    out = b""
    with httpx.Client(verify=TLS, timeout=10) as client, client.stream("GET", f"{url}/v1/sfq/events") as response:
        for block in response.iter_bytes():
            out += block
            if f"id: {upto}\n".encode() in out and out.endswith(b"\n\n"):
                break
    frames = [f for f in out.split(b"\n\n") if f.startswith(b"id: ")]
    return b"\n\n".join(frames)


def lifecycles_ok(events: list[dict[str, Any]]) -> None:
    """Every request: arrive, dispatch, complete; or arrive, cancel. Nothing dispatched twice."""
    for rid, kinds in by_request(events).items():
        assert kinds in (["arrive", "dispatch", "complete"], ["arrive", "cancel"]), (rid, kinds)


def audited(events: list[dict[str, Any]]) -> None:
    report = audit(rows_of(events))
    assert report.violation_count == 0, report.violations
    lifecycles_ok(events)


@pytest.mark.both_servers
async def test_three_replicas_are_one_sfq_with_one_stream_and_one_pool(fake, keys_path: Path, store: Any, tmp_path: Path) -> None:
    upstream, upstream_url = fake
    upstream.most_running = 0
    saved = tmp_path / "group.parquet"
    with running_group(upstream_url, keys_path, store.url, 3, slots=2) as replicas:
        follower = EventStream(replicas[2].url)
        items: list[Any] = []

        def follow() -> None:
            with StreamLogWriter(saved, follower.base_url) as writer:
                for item in follower:
                    items.append(item)
                    writer.write(item)

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        jobs = [ask(replicas[(n + k) % 3].url, user, n, stream=n % 2 == 0) for n in range(5) for k, user in enumerate(USERS)]
        answers = await asyncio.wait_for(asyncio.gather(*jobs), 60)
        ended_events(replicas[0].url, len(jobs))
        final = [state(r.url) for r in replicas]
        last = final[0]["seq"]
        wait_for(lambda: any(getattr(i, "num_rows", 0) and i["seq"][-1].as_py() == last for i in items), what="the follower")
        follower.close()
        thread.join(5)
        streams = [raw_stream(r.url, last) for r in replicas]
        events = read_events(replicas[1].url)
    assert all(answer.startswith("echo: ") for answer in answers)
    assert upstream.most_running <= 2, "more requests in flight than the group's slots"
    assert streams[0] == streams[1] == streams[2] and streams[0].count(b"id: ") == last + 1
    own = ("t", "bound_since", "bound_since_seq", "bound_reason")  # when each replica joined is its own
    assert len({json.dumps({k: v for k, v in s.items() if k not in own}, sort_keys=True) for s in final}) == 1
    assert final[0]["bound"] == "global" and final[0]["replicas"] == 3 and final[0]["inflight"] == 0
    assert {e["replica"] for e in events if e["kind"] == "arrive"} == {0, 1, 2}
    audited(events)
    assert {e["weight"] for e in events if e["user"] == "alice"} == {2.0}
    df, _ = read_log(saved)
    report = audit(log_rows(df))
    assert report.violation_count == 0 and df.height == last + 1
    checked = CliRunner().invoke(app, ["check", str(saved)])
    assert checked.exit_code == 0, checked.output


async def test_two_replicas_racing_for_the_last_slot(fake, keys_path: Path, store: Any) -> None:
    upstream, upstream_url = fake
    upstream.most_running = 0
    with running_group(upstream_url, keys_path, store.url, 2, slots=1) as replicas:
        jobs = [ask(replicas[k % 2].url, USERS[k % 3], k) for k in range(12)]
        await asyncio.wait_for(asyncio.gather(*jobs), 60)
        events = ended_events(replicas[0].url, len(jobs))
    assert upstream.most_running == 1
    dispatches = [e for e in events if e["kind"] == "dispatch"]
    assert len(dispatches) == 12 and {e["replica"] for e in dispatches} == {0, 1}
    audited(events)


async def test_a_slow_store_still_one_sfq(fake, keys_path: Path, store: Any) -> None:
    _, upstream_url = fake
    relay = TcpRelay(store.port, delay_s=0.005)
    try:
        slow_url = relay.url.replace("http://", "redis://") + "/0"
        with running_group(upstream_url, keys_path, slow_url, 2, slots=2, store_timeout_s=1.0) as replicas:
            jobs = [ask(replicas[k % 2].url, USERS[k % 3], k) for k in range(9)]
            await asyncio.wait_for(asyncio.gather(*jobs), 60)
            events = ended_events(replicas[1].url, len(jobs))
            assert state(replicas[0].url)["bound"] == "global"
    finally:
        relay.close()
    assert len([e for e in events if e["kind"] == "dispatch"]) == 9
    audited(events)


def test_meters_round_trip_exactly(store: Any, fake, tmp_path: Path) -> None:
    """Awkward weights make every charge c / w a float with all 53 bits used; the store keeps them exactly."""
    _, upstream_url = fake
    keys = tmp_path / "keys.toml"
    weights = {"u1": 3.0, "u2": 0.7, "u3": 1e-3, "u4": 7.1e5}
    keys.write_text("".join(f'[keys."sk-{u}-93f0a1"]\nuser = "{u}"\nweight = {w!r}\n' for u, w in weights.items()))
    with running_group(upstream_url, keys, store.url, 2, slots=1) as replicas:
        async def burst() -> None:
            jobs = []
            for n in range(16):
                user = f"u{n % 4 + 1}"
                client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{replicas[n % 2].url}/v1", api_key=f"sk-{user}-93f0a1", max_retries=0)
                jobs.append(client.completions.create(model="m", prompt="x" * (n * 7 + 1), max_tokens=3 + n))
            await asyncio.gather(*jobs)

        asyncio.run(burst())
        events = ended_events(replicas[0].url, 16)
        snapshot = state(replicas[1].url)
    audited(events)  # the audit re-derives every join, pick and charge with exact comparisons
    last_meter = {e["user"]: e["meter"] for e in events if e["meter"] is not None}
    assert {u["user"]: u["meter"] for u in snapshot["users"]} == last_meter
    assert any(m != round(m, 6) for m in last_meter.values())


async def test_no_api_key_in_the_store(store: Any, fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_group(upstream_url, keys_path, store.url, 2, slots=1) as replicas:
        await asyncio.gather(*(ask(replicas[k % 2].url, USERS[k % 3], k) for k in range(6)))
    with store.client() as client:
        dump = b"".join(key + repr(client.dump(key)).encode() for key in client.scan_iter(match="*"))
        dump += repr(client.xrange("sfqtui:events")).encode()
    assert dump and b"sfqtui:run" in dump
    for key in KEYS:
        assert key.encode() not in dump


def test_a_replica_with_other_settings_is_refused(store: Any, fake, keys_path: Path) -> None:
    from sfqtui.core.pricing.estimator import EstimatorParams
    from sfqtui.errors import InputError
    from sfqtui.proxy.group import check_store, group_settings

    _, upstream_url = fake
    with running_group(upstream_url, keys_path, store.url, 1, slots=2):
        check_store(store.url, 1.0, group_settings(2, 100_000, EstimatorParams()))
        with pytest.raises(InputError, match="other settings"):
            check_store(store.url, 1.0, group_settings(3, 100_000, EstimatorParams()))

