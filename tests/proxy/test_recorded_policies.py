"""A recording keeps what each request said of itself (semantics §15): a proxy running llm-d's
policy in front of the emulated engine (`sfqtui engine`) records each request's priority, flow
and class as it read them (null where the request said nothing), and `simulate --scheduler
llm-d` on the recording dispatches the same request at every position as the proxy did."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import httpx
import polars as pl
from typer.testing import CliRunner

from sfqtui.proxy.attributes import CLASS_HEADER, FLOW_HEADER, PRIORITY_HEADER
from sfqtui.trace.write import read_metadata, write_trace
from tests.proxy.test_recorded_capacity import MODEL, dispatches, replayed, running_engine
from tests.proxy_fixtures import EVENTS_TOKEN, TLS, read_events, running_proxy
from tests.recording_traffic import USERS, write_keys

Said = tuple[str, int | None, str | None, str | None]  # user, priority, flow, class


async def send_attributed(url: str, requests: int, seed: int) -> list[Said]:
    """Chat completions from four users a few ms apart, each saying (or not) a priority in its
    body or header, a flow and a class; returns what each said, as the proxy should read it."""
    rng = random.Random(seed)
    said: list[Said] = []
    async with httpx.AsyncClient(verify=TLS) as client:
        async def one(user: str, headers: dict[str, str], body: dict[str, Any]) -> None:
            reply = await client.post(f"{url}/v1/chat/completions", json=body, timeout=60,
                                      headers={"authorization": f"Bearer {USERS[user][0]}", **headers})
            assert reply.status_code == 200, reply.text

        jobs = []
        for _ in range(requests):
            user = rng.choice(list(USERS))
            body: dict[str, Any] = {"model": MODEL, "max_tokens": rng.randint(2, 20),
                                    "messages": [{"role": "user", "content": " ".join(f"w{k}" for k in range(rng.randint(1, 60)))}]}
            headers: dict[str, str] = {}
            priority = rng.choice((None, 0, 5, 5, "high"))
            if isinstance(priority, int) and rng.random() < 0.5:
                headers[PRIORITY_HEADER] = str(priority)
            elif priority is not None:
                body["priority"] = priority
            flow = rng.choice((None, "team-a", "team-b"))
            if flow is not None:
                headers[FLOW_HEADER] = flow
            policy_class = rng.choice((None, "gold"))
            if policy_class is not None:
                headers[CLASS_HEADER] = policy_class
            said.append((user, priority if isinstance(priority, int) else None, flow, policy_class))
            jobs.append(asyncio.create_task(one(user, headers, body)))
            await asyncio.sleep(rng.uniform(0.0, 0.02))
        await asyncio.gather(*jobs)
    return said


def test_a_recording_under_llm_d_keeps_each_request_s_policy_and_replays_to_the_live_dispatches(tmp_path: Path, cli: CliRunner) -> None:
    record = tmp_path / "record.parquet"
    with running_engine() as engine, running_proxy(engine.url, write_keys(tmp_path / "keys.toml"), slots=1, scheduler="llm-d",
                                                   record=record, events_token=EVENTS_TOKEN) as proxy:
        said = asyncio.run(send_attributed(proxy.url, 60, seed=3))
        events = read_events(proxy.url, EVENTS_TOKEN)
    live = dispatches(events)
    assert len(live) == 60 and [rid for rid, _ in live] != [e["request_id"] for e in events if e["kind"] == "arrive"]

    rows = pl.read_parquet(record)
    assert rows.schema["priority"] == pl.Int64 and rows.schema["flow"] == pl.String and rows.schema["class"] == pl.String
    recorded = rows.select("user", "priority", "flow", "class").rows()
    assert sorted(recorded, key=repr) == sorted(said, key=repr)  # as said, null where nothing (or no integer) was said
    assert rows["priority"].null_count() > 0 and rows["flow"].null_count() > 0 and rows["class"].null_count() > 0

    again, _, _ = replayed(cli, tmp_path / "log.parquet", str(record), "--scheduler", "llm-d")
    assert again == live  # the same request at every position, charged the same

    # Without what the requests said, llm-d's replay is another run: the test can tell.
    bare = tmp_path / "bare.parquet"
    write_trace(rows.drop("priority", "flow", "class"), bare, read_metadata(record))
    unsaid, _, _ = replayed(cli, tmp_path / "bare-log.parquet", str(bare), "--scheduler", "llm-d")
    assert [rid for rid, _ in unsaid] != [rid for rid, _ in live]
