"""Helpers for the proxy tests: keys, a proxy on loopback, reading its events (the fixtures are in conftest.py)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import openai
from httpx_sse import connect_sse

from sfqtui.protocol import MERGE
from sfqtui.proxy.keys import load_keys
from sfqtui.proxy.server import ProxyServer
from sfqtui.proxy.settings import ProxySettings
from tests.fake_upstream import ServerThread

# Distinctive, so that searching any output for them means something.
KEYS = {
    "sk-test-alice-4f1c9e07d2": ("alice", 2.0),
    "sk-test-bob-b83a61f5c0": ("bob", None),
    "sk-test-carol-27d9ee4a13": ("carol", None),
}
KEY_OF = {user: key for key, (user, _) in KEYS.items()}
EVENTS_TOKEN = "tok-events-9d0c1b7a55"
# Built once and given to every client the tests make: httpx (and the openai client's own HTTP library) builds one
# for each client otherwise (certifi's bundle read, up to a second on a busy machine), though the tests speak plain
# HTTP on loopback.
TLS = httpx.create_ssl_context()


def http_get(url: str, **options: Any) -> httpx.Response:
    return httpx.get(url, verify=TLS, **options)


def openai_http() -> openai.DefaultAsyncHttpxClient:
    """The official client's own HTTP client (its defaults), on the shared TLS context."""
    return openai.DefaultAsyncHttpxClient(verify=TLS)


def openai_sync_http() -> openai.DefaultHttpxClient:
    return openai.DefaultHttpxClient(verify=TLS)


def write_keys(path: Path, keys: Mapping[str, tuple[str, float | None]] = KEYS) -> Path:
    """A proxy's key file at ``path``: each key's user and weight (None: the default)."""
    lines = []
    for key, (user, weight) in keys.items():
        lines += [f'[keys."{key}"]', f'user = "{user}"'] + ([f"weight = {weight}"] if weight else []) + [""]
    path.write_text("\n".join(lines))
    return path


@contextlib.contextmanager
def running_proxy(upstream_url: str, keys_path: Path, port: int = 0, **settings: Any) -> Iterator[ServerThread]:
    """A proxy on 127.0.0.1 (a free port, or ``port``) in a thread; ``server.proxy`` is the Proxy object."""
    options = {"upstreams": (upstream_url,), "slots": 2, "keys": load_keys(keys_path), **settings}
    with ServerThread(ProxyServer(ProxySettings(**options)), port) as server:
        yield server


def state(url: str, token: str | None = None) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    response = http_get(f"{url}/v1/sfq/state", headers=headers)
    response.raise_for_status()
    return response.json()


def read_events(url: str, token: str | None = None, last_event_id: int | None = None, also: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every event the proxy holds after ``last_event_id``, up to its current state's seq (the §7
    events, merges, and the SSE types ``also`` names, such as limit)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    upto = state(url, token)["seq"]
    if last_event_id is not None:
        headers["last-event-id"] = str(last_event_id)
    events: list[dict[str, Any]] = []
    if upto < 0:
        return events
    with httpx.Client(verify=TLS, headers=headers, timeout=10) as client, connect_sse(client, "GET", f"{url}/v1/sfq/events") as source:
        for sse in source.iter_sse():
            if sse.event not in ("message", MERGE, *also):  # a merge is a §7 event of its own SSE type
                continue
            event = sse.json()
            assert str(event["seq"]) == sse.id
            events.append(event)
            if event["seq"] >= upto:
                break
    return events


def ended_events(url: str, requests: int) -> list[dict[str, Any]]:
    """Every event the proxy holds once ``requests`` requests have ended (completed or cancelled): a group
    replica answers its client before its store has written the complete event."""
    def ended() -> list[dict[str, Any]] | None:
        events = read_events(url)
        return events if sum(e["kind"] in ("complete", "cancel") for e in events) >= requests else None

    return wait_for(ended, what=f"{requests} requests to end")


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """``condition()`` once it is true; read 20 times a second at most (a group replica's state is a store call)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def by_request(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each request id's event kinds, in order."""
    kinds: dict[str, list[str]] = {}
    for event in events:
        if event["request_id"] is not None:
            kinds.setdefault(event["request_id"], []).append(event["kind"])
    return kinds



@contextlib.contextmanager
def running_group(upstream_url: str, keys_path: Path, store_url: str, replicas: int, **settings: Any) -> Iterator[list[ServerThread]]:
    """``replicas`` proxies sharing one SFQ through the store, each on 127.0.0.1 in a thread."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(running_proxy(upstream_url, keys_path, state_url=store_url, replica_name=f"test/{k}", **settings))
               for k in range(replicas)]


def ask(url: str, n: int, user: str = "bob") -> None:
    """``n`` completions for ``user`` through the proxy at ``url``, with the official client, one after another."""
    client = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0)
    for k in range(n):
        client.completions.create(model="m", prompt=f"question {k}", max_tokens=16)
