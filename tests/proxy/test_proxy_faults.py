"""Faults: upstream down, failing, silent or breaking off; clients leaving while queued or streaming; SIGTERM."""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from sfqtui.trace.load import load_trace
from tests.fake_upstream import closed_port
from tests.proxy_fixtures import KEY_OF, KEYS, TLS, by_request, openai_http, openai_sync_http, read_events, running_proxy, state, wait_for

ROOT = Path(__file__).resolve().parents[2]


def client_for(url: str, user: str = "alice", **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, **options)


def chat(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": 64, **extra}


def charged_and_kept(events: list[dict[str, Any]], request_id: str) -> None:
    """The request was charged at dispatch and its completion left the meter as it was (no refund)."""
    mine = [e for e in events if e["request_id"] == request_id]
    assert [e["kind"] for e in mine] == ["arrive", "dispatch", "complete"]
    assert mine[1]["cost"] > 0 and mine[2]["meter"] == mine[1]["meter"]


async def test_upstream_down(keys_path: Path) -> None:
    with running_proxy(closed_port(), keys_path) as px:
        with pytest.raises(openai.APIStatusError) as failed:
            await client_for(px.url).chat.completions.create(**chat("anyone there?"))
        assert failed.value.status_code == 502
        assert failed.value.body["code"] == "upstream_unreachable"  # type: ignore[index]  # openai types the error body as object; the proxy sends a JSON object
        events = read_events(px.url)
        assert state(px.url)["inflight"] == 0
    charged_and_kept(events, "r0")


def test_an_upstream_that_cannot_be_reached_at_start_is_named_in_the_log(fake, keys_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Before any request: one line for each upstream that refuses, or that answers 404 where its model list should be
    (not its base URL); nothing for one that answers."""
    _, upstream_url = fake
    down = closed_port()
    caplog.set_level(logging.INFO, logger="sfqtui.proxy")
    with running_proxy(upstream_url, keys_path, upstreams=(down, upstream_url, f"{upstream_url}/api")):
        wait_for(lambda: len([r for r in caplog.records if r.name == "sfqtui.proxy"]) >= 2, what="the probes' lines")
    lines = sorted(r.getMessage() for r in caplog.records if r.name == "sfqtui.proxy")
    assert lines == sorted([f"upstream {down} cannot be reached (Connection refused): a request it refuses goes to the next upstream, or gets a 502",
                            f"upstream {upstream_url}/api answers 404 for /v1/models: is that the server's base URL?"])


async def test_a_refused_connection_goes_to_the_next_upstream(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(closed_port(), keys_path, upstreams=(closed_port(), upstream_url)) as px:
        answers = [await client_for(px.url).chat.completions.create(**chat(f"hello {n}")) for n in range(3)]
    assert [a.choices[0].message.content for a in answers] == [f"echo: hello {n}" for n in range(3)]


@pytest.mark.parametrize("stream", [False, True])
async def test_upstream_500(fake, keys_path: Path, stream: bool) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        with pytest.raises(openai.APIStatusError) as failed:
            await client_for(px.url).chat.completions.create(**chat("[fail500] please", stream=stream))
        assert failed.value.status_code == 502
        assert "failed on purpose" in failed.value.message
        events = read_events(px.url)
    charged_and_kept(events, "r0")


@pytest.mark.parametrize("stream", [False, True])
async def test_an_upstream_4xx_reaches_the_client_as_it_was(fake, keys_path: Path, stream: bool) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        with pytest.raises(openai.BadRequestError) as failed:
            await client_for(px.url).chat.completions.create(**chat("[bad400] please", stream=stream))
        assert failed.value.body["param"] == "messages"  # type: ignore[index]  # openai types the error body as object; the proxy sends a JSON object
        assert "rejects this request" in failed.value.message
        events = read_events(px.url)
        assert state(px.url)["inflight"] == 0
    charged_and_kept(events, "r0")


async def test_upstream_timeout(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, upstream_timeout_s=0.3) as px:
        with pytest.raises(openai.APIStatusError) as failed:
            await client_for(px.url).chat.completions.create(**chat("[hang] forever"))
        assert failed.value.status_code == 504
        assert failed.value.body["code"] == "upstream_timeout"  # type: ignore[index]  # openai types the error body as object; the proxy sends a JSON object
        answer = await client_for(px.url).chat.completions.create(**chat("and now?"))
        assert answer.choices[0].message.content == "echo: and now?"
        events = read_events(px.url)
    charged_and_kept(events, "r0")


async def test_upstream_breaking_off_a_stream_is_an_error_event(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        stream = await client_for(px.url).chat.completions.create(**chat("[cut] one two three four", stream=True))
        with pytest.raises(openai.APIError, match="upstream"):
            async for _ in stream:
                pass
        events = read_events(px.url)
        assert state(px.url)["inflight"] == 0
    charged_and_kept(events, "r0")


async def test_client_gone_while_queued_is_cancelled_uncharged(fake, keys_path: Path) -> None:
    upstream, upstream_url = fake
    with running_proxy(upstream_url, keys_path, slots=1) as px:
        held = "[held] until the other request is cancelled"  # the slot stays taken however slow the machine
        holder = asyncio.ensure_future(client_for(px.url, "bob").chat.completions.create(**chat(held)))
        await asyncio.to_thread(wait_for, lambda: state(px.url)["inflight"] == 1, what="the slot to be taken")
        async with httpx.AsyncClient(verify=TLS, base_url=px.url) as raw:
            waiting = asyncio.ensure_future(raw.post("/v1/chat/completions", json=chat("never sent upstream"),
                                                     headers={"authorization": f"Bearer {KEY_OF['alice']}"}))
            await asyncio.to_thread(wait_for, lambda: {u["user"]: u["queued"] for u in state(px.url)["users"]}.get("alice") == 1,
                                    what="the request to queue")
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
        await asyncio.to_thread(wait_for, lambda: any(e["kind"] == "cancel" for e in read_events(px.url)), what="the cancel event")
        assert state(px.url)["inflight"] == 1  # the cancel came while the slot was still taken
        upstream.release(held)
        assert (await holder).choices[0].message.content == f"echo: {held}"
        events = read_events(px.url)
    kinds = by_request(events)
    assert kinds["r0"] == ["arrive", "dispatch", "complete"]
    assert kinds["r1"] == ["arrive", "cancel"]
    arrive, cancel = (e for e in events if e["request_id"] == "r1")
    assert cancel["meter"] == arrive["meter"] and cancel["cost"] is None
    assert not any("never sent upstream" in str(body) for body in upstream.seen)


async def test_client_gone_while_streaming_closes_upstream_once(fake, keys_path: Path) -> None:
    upstream, upstream_url = fake
    prompt = "[slow] " + " ".join(f"w{n}" for n in range(40))
    with running_proxy(upstream_url, keys_path, slots=1) as px:
        async with httpx.AsyncClient(verify=TLS, base_url=px.url) as raw:
            async with raw.stream("POST", "/v1/chat/completions", json=chat(prompt, stream=True),
                                  headers={"authorization": f"Bearer {KEY_OF['carol']}"}) as response:
                async for _ in response.aiter_bytes():
                    break
        await asyncio.to_thread(wait_for, lambda: upstream.closed_early[prompt] >= 1, what="the upstream stream to close")
        await asyncio.to_thread(wait_for, lambda: state(px.url)["inflight"] == 0, what="the slot to be freed")
        after = await client_for(px.url, "carol").chat.completions.create(**chat("next one"))
        assert after.choices[0].message.content == "echo: next one"
        await asyncio.sleep(0.2)
        events = read_events(px.url)
    assert upstream.closed_early[prompt] == 1
    charged_and_kept(events, "r0")
    assert by_request(events)["r1"] == ["arrive", "dispatch", "complete"]


async def test_a_stream_is_relayed_as_it_comes_not_when_it_ends(fake, keys_path: Path) -> None:
    upstream, upstream_url = fake
    prompt = "[pause] one two three"
    with running_proxy(upstream_url, keys_path) as px:
        stream = await client_for(px.url).chat.completions.create(**chat(prompt, stream=True))
        first = await anext(aiter(stream))
        assert first.choices[0].delta.content == "echo:" and prompt in upstream.pausing, "the first chunk came before the upstream went on"
        upstream.release(prompt)
        rest = [chunk.choices[0].delta.content async for chunk in stream if chunk.choices]
    assert "".join(piece or "" for piece in rest) == " [pause] one two three"


def _stream_text(url: str, key: str, prompt: str, out: dict[str, Any]) -> None:
    client = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{url}/v1", api_key=key, max_retries=0)
    try:
        stream = client.chat.completions.create(**chat(prompt, max_tokens=100, stream=True))
        out["text"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    except openai.APIStatusError as exc:
        out["status"] = exc.status_code
    except openai.APIError as exc:
        out["error"] = exc.message


def test_sigterm_finishes_or_fails_running_requests_and_flushes_the_record(fake, keys_path: Path, tmp_path: Path) -> None:
    upstream, upstream_url = fake
    record = tmp_path / "record.parquet"
    command = [sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream_url, "--listen", "127.0.0.1:0", "--slots", "2",
               "--keys", str(keys_path), "--record", str(record), "--shutdown-grace", "3"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
        assert "listening on http://" in first, first
        url = first.split("listening on ")[1].split()[0]
        # quick runs until the proxy has begun to drain (its queued request refused), slow streams for 8 s: longer than the grace.
        quick, slow, queued = "[held] " + " ".join(f"q{n}" for n in range(13)), "[slow] " + " ".join(f"w{n}" for n in range(80)), "waits"
        outs: dict[str, dict[str, Any]] = {p: {} for p in (quick, slow, queued)}
        for n, (user, prompt) in enumerate((("bob", slow), ("alice", quick), ("carol", queued))):
            threading.Thread(target=_stream_text, args=(url, KEY_OF[user], prompt, outs[prompt]), name=f"client-{n}").start()
            if n < 2:
                wait_for(functools.partial(_inflight_is, url, n + 1), what="a running request")
        wait_for(lambda: sum(u["queued"] for u in state(url)["users"]) == 1, what="a queued request")
        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: outs[queued], what="the queued request refused")
        assert not outs[quick]
        upstream.release(quick)
        # uvicorn re-raises the signal once it has shut down cleanly, so the exit status is the signal's.
        assert proc.wait(10) == -signal.SIGTERM
        wait_for(lambda: all(outs.values()), what="every client's answer")
    finally:
        if proc.poll() is None:
            proc.kill()
    output = proc.stdout.read() + first + proc.stderr.read()  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
    assert outs[quick] == {"text": f"echo: {quick}"}
    assert "shutting down" in outs[slow]["error"]
    assert outs[queued] == {"status": 503}
    assert not any(key in output for key in KEYS), "an API key in the proxy's output"
    trace = load_trace(record)
    rows = dict(zip(trace.table["request_id"].to_pylist(), trace.trace.output_tokens))  # type: ignore[arg-type]  # a recorded trace has output_tokens
    assert len(rows) == 2  # the two that ran; the cancelled one never did
    assert sorted(rows.values()) == [-1, 15]  # the failed one has no output (null), the quick one its 15 words
    assert not any(key.encode() in record.read_bytes() for key in KEYS)


def _inflight_is(url: str, n: int) -> bool:
    return bool(state(url)["inflight"] == n)
