"""A group's failures, with replicas as processes of their own: kill -9, the store paused and restarted,
SIGTERM on one replica, a replica restarted on the same address, a replica joining late; and every
surface (state, the bound event, /metrics, the recordings) saying the same while the store is away."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from sfqtui.attach.bound import Bound
from sfqtui.attach.run_logs import RunLogs
from sfqtui.attach.source import LiveSource
from sfqtui.trace.write import read_metadata
from tests.proxy.test_proxy_group import audited, lifecycles_ok
from tests.proxy_fixtures import KEY_OF, TLS, by_request, openai_http, read_events, state
from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 1.5




class Replica:
    """``sfqtui proxy --state`` as a process, on a port of its own (kept across a restart)."""

    def __init__(self, upstream_url: str, keys: Path, store_url: str, slots: int, port: int | None = None, *options: str) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream_url, "--keys", str(keys), "--slots", str(slots),
                        "--listen", f"127.0.0.1:{self.port}", "--state", store_url, "--lease", str(LEASE_S),
                        "--store-timeout", "0.5", "--shutdown-grace", "5", *options]
        self.proc = subprocess.Popen(self.command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()  # type: ignore[union-attr]
        assert "listening on" in line, line + self.proc.stderr.read()  # type: ignore[union-attr]

    def stop(self, sig: int = signal.SIGTERM) -> str:
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=30)
        return err


def client(url: str, user: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, timeout=30)


def chat(prompt: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": 4}


async def until(condition: Any, timeout: float = 30.0, what: str = "condition") -> None:
    """wait_for, letting this test's requests run meanwhile. A replica's state is read from the store: ten
    reads a second, not more, lest the polling itself slow the replicas past their store timeout."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def settle(jobs: list[Any]) -> list[Any]:
    return await asyncio.wait_for(asyncio.gather(*jobs, return_exceptions=True), 60)


async def ended(url: str) -> list[dict[str, Any]]:
    """The events one replica holds, once every request in them has ended: another replica's
    completion reaches it through the group's stream a moment after that replica answered."""
    await until(lambda: all(kinds[-1] in ("complete", "cancel") for kinds in by_request(read_events(url)).values()), timeout=15,
                what=f"every request to end in {url}'s stream")
    return read_events(url)


@pytest.mark.both_servers
async def test_kill_9_settles_the_dead_replicas_requests_and_the_others_keep_answering(fake, keys_path: Path, store: Any) -> None:
    _, upstream_url = fake
    a, b = Replica(upstream_url, keys_path, store.url, 2), Replica(upstream_url, keys_path, store.url, 2)
    try:
        hung = [asyncio.ensure_future(client(b.url, "bob").chat.completions.create(**chat(f"[hang] {n}"))) for n in range(2)]
        await until(lambda: state(a.url)["inflight"] == 2, what="b's requests to hold both slots")
        queued = [asyncio.ensure_future(client(b.url, "carol").chat.completions.create(**chat(f"waits {n}"))) for n in range(2)]
        mine = asyncio.ensure_future(client(a.url, "alice").chat.completions.create(**chat("a's own")))
        await until(lambda: sum(u["queued"] for u in state(a.url)["users"]) == 3, what="three queued")
        b.proc.kill()
        b.proc.wait(10)
        started = time.monotonic()
        answer = await asyncio.wait_for(mine, 30)  # b's slots come back once its lease runs out
        waited = time.monotonic() - started
        lost = await settle([*hung, *queued])
        events = await ended(a.url)
        after = state(a.url)
    finally:
        for replica in (a, b):
            if replica.proc.poll() is None:
                replica.stop()
    assert answer.choices[0].message.content == "echo: a's own"
    assert waited < LEASE_S + 3
    assert all(isinstance(x, Exception) for x in lost)
    dead = {e["request_id"]: e for e in events if e.get("replica") == 1 and e["kind"] in ("cancel", "complete")}
    assert sorted(e["kind"] for e in dead.values()) == ["cancel", "cancel", "complete", "complete"]
    assert all(e["outcome"] == "lost" for e in dead.values() if e["kind"] == "complete")
    assert after["inflight"] == 0 and after["replicas"] == 1
    audited(events)


@pytest.mark.both_servers
async def test_the_store_paused_then_restarted_answers_go_on(fake, keys_path: Path, store: Any) -> None:
    _, upstream_url = fake
    a, b = Replica(upstream_url, keys_path, store.url, 2), Replica(upstream_url, keys_path, store.url, 2)
    try:
        await settle([client(r.url, u).chat.completions.create(**chat(f"before {u}")) for r in (a, b) for u in ("alice", "bob")])
        before = {u["user"]: u["meter"] for u in state(a.url)["users"]}
        run = state(a.url)["run"]
        await asyncio.sleep(LEASE_S)  # a replica learns the group's size when it renews its lease (every quarter of it)
        store.pause()
        answers = await settle([client(r.url, u).chat.completions.create(**chat(f"paused {u}")) for r in (a, b) for u in ("alice", "carol")])
        suspended = [state(r.url) for r in (a, b)]
        store.resume()
        await until(lambda: all(state(r.url)["bound"] == "global" for r in (a, b)), timeout=15, what="both to rejoin")
        # b's merge reaches a through the group's stream, which a follows a moment after it rejoins.
        await until(lambda: "carol" in {u["user"] for u in state(a.url)["users"]}, timeout=15, what="b's merge to reach a")
        resumed = state(a.url)
        events = await ended(b.url)
        await settle([client(a.url, "bob").chat.completions.create(**chat("after"))])
        store.restart()  # empty: the group starts a new run
        answers += await settle([client(r.url, "alice").chat.completions.create(**chat("restarted")) for r in (a, b)])
        await until(lambda: all(state(r.url)["bound"] == "global" for r in (a, b)), timeout=15, what="both to rejoin the new store")
        renewed = state(a.url)
        answers += await settle([client(r.url, "bob").chat.completions.create(**chat("new run")) for r in (a, b)])
        new_events = await ended(a.url)
    finally:
        for replica in (a, b):
            replica.stop()
    assert not [x for x in answers if isinstance(x, Exception)], answers
    assert [s["bound"] for s in suspended] == ["suspended", "suspended"]
    assert sum(s["slots"] for s in suspended) == 2  # each on its share of the pool
    assert resumed["run"] == run and resumed["bound"] == "global", resumed
    merged = {u["user"]: u["meter"] for u in resumed["users"]}
    assert all(merged[user] >= meter for user, meter in before.items()), "a merge lowered a meter"
    assert merged["carol"] > 0 and merged["alice"] > before["alice"], (before, resumed)  # the suspended charges were kept
    lifecycles_ok(events)
    assert renewed["run"] != run and new_events[0]["seq"] == 0
    audited(new_events)


async def test_sigterm_drains_only_its_own_requests(fake, keys_path: Path, store: Any) -> None:
    upstream, upstream_url = fake
    a, b = Replica(upstream_url, keys_path, store.url, 1), Replica(upstream_url, keys_path, store.url, 1)
    try:
        held = "[held] until a drains"  # the group's one slot stays taken until a has begun to drain, however slow the machine
        first = asyncio.ensure_future(client(a.url, "alice").chat.completions.create(**chat(held)))
        await until(lambda: state(a.url)["inflight"] == 1, what="a's request running")
        waiting_b = asyncio.ensure_future(client(b.url, "bob").chat.completions.create(**chat("b waits")))
        waiting_a = asyncio.ensure_future(client(a.url, "carol").chat.completions.create(**chat("a waits")))
        await until(lambda: sum(u["queued"] for u in state(b.url)["users"]) == 2, what="two queued")
        a.proc.send_signal(signal.SIGTERM)
        await settle([waiting_a])  # refused at once: a is draining, its request still running
        assert not first.done()
        upstream.release(held)
        done = await settle([first, waiting_a, waiting_b])
        a.proc.wait(30)
        await until(lambda: state(b.url)["replicas"] == 1, timeout=LEASE_S + 5, what="a to leave the group")  # at once, unless its leave timed out
        events = await ended(b.url)
    finally:
        for replica in (a, b):
            if replica.proc.poll() is None:
                replica.stop()
    assert done[0].choices[0].message.content.startswith("echo:")  # a's running request finished in the grace
    assert isinstance(done[1], openai.APIStatusError) and done[1].status_code == 503  # a's queued one: 503
    assert done[2].choices[0].message.content == "echo: b waits"  # b's goes on
    lifecycles_ok(events)
    audited(events)


async def test_a_restarted_replica_and_a_new_one_join_the_running_group(fake, keys_path: Path, store: Any) -> None:
    _, upstream_url = fake
    a = Replica(upstream_url, keys_path, store.url, 2)
    b = Replica(upstream_url, keys_path, store.url, 2)
    try:
        hung = asyncio.ensure_future(client(b.url, "bob").chat.completions.create(**chat("[hang] lost")))
        await until(lambda: state(a.url)["inflight"] == 1, what="b's request running")
        b.proc.kill()
        b.proc.wait(10)
        b = Replica(upstream_url, keys_path, store.url, 2, port=b.port)  # same address: at once, no lease to wait for
        assert state(b.url)["inflight"] == 0
        c = Replica(upstream_url, keys_path, store.url, 2)
        answers = await settle([client(r.url, "carol").chat.completions.create(**chat(f"hi {k}")) for k, r in enumerate((a, b, c))])
        await settle([hung])
        events = await ended(c.url)
        replicas = state(a.url)["replicas"]
        c.stop()
    finally:
        for replica in (a, b):
            if replica.proc.poll() is None:
                replica.stop()
    assert [x.choices[0].message.content for x in answers] == ["echo: hi 0", "echo: hi 1", "echo: hi 2"]
    assert replicas == 3
    lost = [e for e in events if e["request_id"] == "r1-0"]
    assert [e["kind"] for e in lost] == ["arrive", "dispatch", "complete"] and lost[-1]["outcome"] == "lost"
    assert {e["replica"] for e in events if e["kind"] == "arrive"} == {0, 1, 2}
    audited(events)
    assert json.dumps(events).count('"r1-0"') == 3


class Scraper:
    """Scrapes /metrics of every replica every 0.1 s in a thread: (monotonic time, url, status, sfqtui_global_bound or None)."""

    def __init__(self, urls: list[str]) -> None:
        self.scrapes: list[tuple[float, str, int, float | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(urls,), daemon=True)
        self._thread.start()

    def _run(self, urls: list[str]) -> None:
        with httpx.Client(verify=TLS, timeout=5) as client:
            while not self._stop.wait(0.1):
                for url in urls:
                    response = client.get(f"{url}/metrics")
                    found = re.search(r"^sfqtui_global_bound (\S+)$", response.text, re.MULTILINE)
                    self.scrapes.append((time.monotonic(), url, response.status_code, float(found.group(1)) if found else None))

    def bound(self, url: str) -> float | None:
        return next((value for _, at, _, value in reversed(self.scrapes) if at == url), None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


class Attached:
    """What ``sfqtui attach --record`` reads and records of one replica: a LiveSource in a thread."""

    def __init__(self, url: str, record: Path) -> None:
        self.source = LiveSource([url], record=RunLogs(record, url))
        self.bounds: list[Bound] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for item, _ in self.source.batches():
            if isinstance(item, Bound):
                self.bounds.append(item)

    def stop(self) -> None:
        self.source.close()
        self._thread.join(10)


async def test_every_surface_says_the_bound_is_suspended_while_the_store_is_paused(fake, keys_path: Path, store: Any, tmp_path: Path) -> None:
    _, upstream_url = fake
    a = Replica(upstream_url, keys_path, store.url, 2, None, "--record", str(tmp_path / "a.parquet"))
    b = Replica(upstream_url, keys_path, store.url, 2)
    attached = Attached(b.url, tmp_path / "b-seen.parquet")
    scraper = Scraper([a.url, b.url])
    replicas = (a, b)
    try:
        await settle([client(r.url, "alice").chat.completions.create(**chat("before")) for r in replicas])
        await until(lambda: [x.bound for x in attached.bounds] == ["global"], what="the bound event on connecting")
        store.pause()
        paused = time.monotonic()

        def says(word: str, gauge: float) -> bool:
            return all(state(r.url)["bound"] == word and scraper.bound(r.url) == gauge for r in replicas) \
                and attached.bounds[-1].bound == word

        await until(lambda: says("suspended", 0.0), timeout=5, what="every surface to say suspended")
        suspended_in = time.monotonic() - paused
        during = [state(r.url) for r in replicas]
        answered = await settle([client(r.url, "bob").chat.completions.create(**chat("paused")) for r in replicas])
        store.resume()
        resumed = time.monotonic()
        await until(lambda: says("global", 1.0), timeout=5, what="every surface to say global again")
        global_in = time.monotonic() - resumed
        after = state(a.url)
        scraper.stop()
        attached.stop()
    finally:
        scraper.stop()
        attached.stop()
        for replica in replicas:
            replica.stop()
    assert suspended_in < 3 and global_in < 3, (suspended_in, global_in)
    statuses = [status for _, _, status, _ in scraper.scrapes]
    assert set(statuses) == {200}, statuses  # no scrape failed, of either replica
    scraped_while_paused = {url for at, url, _, _ in scraper.scrapes if paused <= at <= resumed}
    assert scraped_while_paused == {a.url, b.url}, scraper.scrapes  # both were scraped during the outage, not only around it
    assert not [x for x in answered if isinstance(x, Exception)], answered
    for seen in during:
        assert seen["bound_reason"] and seen["bound_since"] > time.time() - 30 and seen["bound_since_seq"] >= 0, seen
    assert after["bound"] == "global" and after["bound_since"] > during[0]["bound_since"] and after["replicas"] == 2
    bounds = [x.bound for x in attached.bounds]
    assert bounds == ["global", "suspended", "global"], bounds
    assert all(x.since is not None and x.since_seq is not None and x.reason for x in attached.bounds)
    for recorded in (read_metadata(tmp_path / "b-seen.parquet"), read_metadata(tmp_path / "a.parquet")):
        assert [x["bound"] for x in recorded["bound"]] == ["global", "suspended", "global"], recorded
        assert all(x["since"] and x["reason"] for x in recorded["bound"])
