"""Security: keys and tokens are checked, and no API key ever leaves the proxy; keys.toml is checked at start."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.attach.stream import EventStream, Status
from sfqtui.cli.app import app
from sfqtui.errors import InputError
from sfqtui.proxy.keys import load_keys
from sfqtui.proxy.server import ProxyServer
from tests.proxy_fixtures import EVENTS_TOKEN, KEY_OF, KEYS, TLS, http_get, openai_http, read_events, running_proxy, state

ROOT = Path(__file__).resolve().parents[2]


async def test_missing_or_unknown_key_is_401_in_openai_format(fake, keys_path: Path) -> None:
    upstream, upstream_url = fake
    seen_before = len(upstream.seen)
    with running_proxy(upstream_url, keys_path) as px:
        client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{px.url}/v1", api_key="sk-not-a-key", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as refused:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert refused.value.body["code"] == "invalid_api_key" and "sk-not-a-key" not in refused.value.message  # type: ignore[index]  # openai types the error body as object; the proxy sends a JSON object
        async with httpx.AsyncClient(verify=TLS, base_url=px.url) as raw:
            missing = await raw.post("/v1/completions", json={"prompt": "hi"})
            models = await raw.get("/v1/models")
        assert missing.status_code == 401 and missing.json()["error"]["type"] == "invalid_request_error"
        assert models.status_code == 401
        assert state(px.url)["seq"] == -1, "a refused request must not reach the scheduler"
    assert len(upstream.seen) == seen_before


async def test_every_openai_route_needs_a_key_before_anything_else(fake, keys_path: Path) -> None:
    """One gate in front of /v1 (the middleware): a request without a valid key is refused whatever
    its path, method or body, and only a refused completion counts as a refused request."""
    upstream, upstream_url = fake
    seen_before = len(upstream.seen)
    with running_proxy(upstream_url, keys_path) as px:
        async with httpx.AsyncClient(verify=TLS, base_url=px.url) as raw:
            for method, path in (("POST", "/v1/chat/completions"), ("GET", "/v1/chat/completions"), ("POST", "/v1/completions"),
                                 ("GET", "/v1/models"), ("GET", "/v1/embeddings")):
                for headers in ({}, {"authorization": "Bearer sk-not-a-key"}, {"authorization": f"Basic {KEY_OF['bob']}"}):
                    refused = await raw.request(method, path, content=b"not json", headers=headers)
                    assert refused.status_code == 401, (method, path, headers)
                    assert refused.json()["error"]["code"] == "invalid_api_key" and refused.headers["www-authenticate"] == "Bearer"
            key = {"authorization": f"Bearer {KEY_OF['bob']}"}
            assert (await raw.get("/v1/embeddings", headers=key)).status_code == 404
            assert (await raw.post("/v1/completions", content=b"not json", headers=key)).status_code == 400
            metrics = (await raw.get("/metrics")).text
        assert 'sfqtui_requests_total{outcome="refused",user="unknown"} 9.0' in metrics  # the 3 requests to a completion path, with each of 3 headers
        assert state(px.url)["seq"] == -1
    assert len(upstream.seen) == seen_before


def test_events_and_state_need_the_token_when_set(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, events_token=EVENTS_TOKEN) as px:
        for path in ("/v1/sfq/state", "/v1/sfq/events"):
            assert http_get(f"{px.url}{path}").status_code == 401
            assert http_get(f"{px.url}{path}", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert state(px.url, EVENTS_TOKEN)["slots"] == 2
        assert read_events(px.url, EVENTS_TOKEN) == []
        refused = list(EventStream(px.url, token="wrong"))
        assert isinstance(refused[-1], Status) and refused[-1].state == "refused"
        assert refused[-1].detail.startswith(f"HTTP 401 from {px.url}: the proxy refused the events token given")
        assert http_get(f"{px.url}/metrics").status_code == 200


async def test_no_key_in_any_output(fake, keys_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                    capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    upstream, upstream_url = fake
    record = tmp_path / "record.parquet"
    outputs: list[str] = []
    with running_proxy(upstream_url, keys_path, record=record, events_token=EVENTS_TOKEN, slots=1) as px:
        for user in KEY_OF:
            client = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{px.url}/v1", api_key=KEY_OF[user], max_retries=0)
            answer = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"hi from {user}"}])
            outputs.append(answer.model_dump_json())
            stream = await client.completions.create(model="m", prompt="stream please", stream=True, stream_options={"include_usage": True})
            outputs += [chunk.model_dump_json() async for chunk in stream]
            try:
                await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "[fail500]"}])
            except openai.APIStatusError as exc:
                outputs.append(exc.response.text)
            outputs.append((await client.models.list()).model_dump_json())
        async with httpx.AsyncClient(verify=TLS, base_url=px.url) as raw:
            for key in KEYS:  # a key sent where it does not belong is not echoed either
                outputs.append((await raw.get("/v1/sfq/state", headers={"authorization": f"Bearer {key}"})).text)
                outputs.append((await raw.get("/nowhere", headers={"authorization": f"Bearer {key}"})).text)
        outputs.append(str(read_events(px.url, EVENTS_TOKEN)))
        outputs.append(str(state(px.url, EVENTS_TOKEN)))
        outputs.append(http_get(f"{px.url}/metrics").text)
        assert isinstance(px.server, ProxyServer)
        outputs.append(repr(px.server.proxy.settings))
    outputs.append(caplog.text)
    outputs += capfd.readouterr()
    outputs.append(str(upstream.seen) + str(upstream.headers_seen))
    outputs.append(record.read_bytes().decode("latin-1"))
    outputs.append(str(pl.read_parquet(record).to_dicts()))
    everything = "\n".join(outputs)
    assert "hi from alice" in everything and "sfqtui_dispatched_cost_total" in everything
    for key in KEYS:
        assert key not in everything


def _keys_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    with pytest.raises(InputError) as refused:
        load_keys(path)
    return str(refused.value)


@pytest.mark.parametrize("text, line, words", [
    ('[keys."k1"]\nuser = "a"\nweight = 1\n\n[keys."k2"\nuser = "b"\n', 5, "Expected ']'"),
    ('[keys."k1"]\nuser = "a"\n\n[keys."k2"]\nweight = 2.0\n', 4, "user must be a non-empty string"),
    ('[keys."k1"]\nuser = "a"\nweight = -1\n', 3, "weight must be a number > 0"),
    ('[keys."k1"]\nuser = "a"\nwieght = 1\n', 3, "unknown field"),
    ('[keys."k1"]\nuser = "a"\nweight = 1\n[keys."k2"]\nuser = "a"\nweight = 2\n', 6, "already has weight 1 (line 3)"),
    ('[keys."k1"]\nuser = "k2"\n[keys."k2"]\nuser = "b"\n', 2, "also an API key"),
    ('[users]\nalice = 1\n', 1, "unknown table or key"),
    ('\n["k1"]\nuser = "a"\n', 2, "unknown table or key"),
    ('[keys]\n"k1" = { user = 3 }\n', 2, "user must be a non-empty string"),
    ('[keys."k1"]\nuser = "a"\n[keys."k1"]\nuser = "b"\n', 3, "declared twice"),
])
def test_keys_file_errors_name_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    message = _keys_error(tmp_path, text)
    assert f"line {line}:" in message and words in message
    assert "k1" not in message.replace("keys.toml", "")


def test_keys_file_error_exits_2_at_start(tmp_path: Path, cli: CliRunner) -> None:
    bad = tmp_path / "keys.toml"
    bad.write_text('[keys."sk-secret-1"]\nuser = "a"\nweight = "heavy"\n')
    result = cli.invoke(app, ["proxy", "--upstream", "http://127.0.0.1:9", "--slots", "1", "--keys", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"sfqtui: error: {bad}, line 3: weight must be a number > 0"
    assert "sk-secret-1" not in result.output


@pytest.mark.parametrize("change, words", [
    ({"--listen": "localhost"}, "expected host:port"),
    ({"--listen": "busy"}, "cannot listen on 127.0.0.1:"),
    ({"--upstream": "ftp://gpu1"}, "expected an http:// or https:// URL"),
    ({"--slots": "0"}, "--slots must be >= 1"),
    ({"--record": "/no/such/folder/x.parquet"}, "does not exist"),
    ({"--ring": "0"}, "at least 1 event"),
])
def test_bad_options_exit_2_before_serving(keys_path: Path, cli: CliRunner, change: dict[str, str], words: str) -> None:
    options = {"--upstream": "http://127.0.0.1:9", "--slots": "1", "--keys": str(keys_path), "--listen": "127.0.0.1:0", **change}
    with socket.create_server(("127.0.0.1", 0)) as busy:
        if options["--listen"] == "busy":
            options["--listen"] = f"127.0.0.1:{busy.getsockname()[1]}"
        result = cli.invoke(app, ["proxy", *[part for pair in options.items() for part in pair]])
    assert result.exit_code == 2, result.output
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_proxy_command_loads_no_ui() -> None:
    modules = ["sfqtui.cli.proxy", "sfqtui.proxy.server", "sfqtui.attach.stream", "sfqtui.attach.stream_log"]
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print(sorted(m for m in ('textual', 'sfqtui.ui') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert result.stdout.strip() == "[]"
