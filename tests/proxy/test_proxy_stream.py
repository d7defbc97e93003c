"""The §8 stream and its client: resume across a cut connection, gaps when the ring overran, saving it as a log."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from httpx_sse import connect_sse

from sfqtui.attach.stream import EventStream, Gap, Status
from sfqtui.attach.stream_log import StreamLogWriter
from sfqtui.core.analysis.audit import audit
from sfqtui.trace.eventlog import log_rows, read_log
from tests.proxy_fixtures import TLS, ask, read_events, running_proxy, state, wait_for
from tests.tcp_relay import TcpRelay


class Follower:
    """An EventStream iterated in a thread of its own, as the dashboard does."""

    def __init__(self, url: str, log: Path | None = None) -> None:
        self.stream = EventStream(url, backoff_s=(0.05, 0.2))
        self.items: list[Any] = []
        self._log = log
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self._log is None:
            self.items.extend(self.stream)
            return
        with StreamLogWriter(self._log, self.stream.base_url) as writer:
            for item in self.stream:
                self.items.append(item)
                writer.write(item)

    def caught_up(self, url: str) -> None:
        wait_for(lambda: self.seqs()[-1:] == [state(url)["seq"]], what="the follower to catch up")

    def stop(self) -> None:
        self.stream.close()
        self._thread.join(5)
        assert not self._thread.is_alive()

    def seqs(self) -> list[int]:
        return [seq for item in self.items if isinstance(item, pa.Table) for seq in item["seq"].to_pylist()]

    def states(self) -> list[str]:
        """The connection's states, each once in a row (a failed attempt says again when the next one comes)."""
        states = [item.state for item in self.items if isinstance(item, Status)]
        return [state for k, state in enumerate(states) if k == 0 or states[k - 1] != state]

    def gaps(self) -> list[Gap]:
        return [item for item in self.items if isinstance(item, Gap)]


def test_cut_connection_resumes_without_loss_or_duplicates(fake, keys_path: Path, tmp_path: Path) -> None:
    _, upstream_url = fake
    saved = tmp_path / "live.parquet"
    with running_proxy(upstream_url, keys_path) as px:
        relay = TcpRelay(px.port)
        follower = Follower(relay.url, log=saved)
        ask(px.url, 3)
        follower.caught_up(px.url)
        relay.cut(refuse=True)
        ask(px.url, 3)
        wait_for(lambda: "reconnecting" in follower.states(), what="the follower to notice")
        ask(px.url, 2, user="alice")
        relay.accept_again()
        follower.caught_up(px.url)
        follower.stop()
        relay.close()
        last = state(px.url)["seq"]
    assert follower.seqs() == list(range(last + 1))
    assert follower.states() == ["connecting", "live", "reconnecting", "live"]
    assert follower.gaps() == []
    df, metadata = read_log(saved)
    assert df["seq"].to_list() == list(range(last + 1)) and metadata["scheduler"] == "sfq"
    report = audit(log_rows(df))
    assert report.violation_count == 0, report.violations


def test_ring_overrun_sends_a_gap_then_what_is_held(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, ring_size=5) as px:
        ask(px.url, 3)
        held = read_events(px.url, last_event_id=1)
    last = held[-1]["seq"]
    first = last - 4
    gap = held[0]
    assert gap["kind"] == "gap" and gap["first_seq"] == first and gap["seq"] == first - 1
    assert [e["seq"] for e in held[1:]] == list(range(first, last + 1))


def test_follower_past_an_overrun_gets_a_gap_with_the_state(fake, keys_path: Path, tmp_path: Path) -> None:
    _, upstream_url = fake
    saved = tmp_path / "gappy.parquet"
    with running_proxy(upstream_url, keys_path, ring_size=5) as px:
        ask(px.url, 2)
        relay = TcpRelay(px.port)
        follower = Follower(relay.url, log=saved)
        follower.caught_up(px.url)
        relay.cut(refuse=True)
        wait_for(lambda: "reconnecting" in follower.states(), what="the follower to notice")
        ask(px.url, 3)
        relay.accept_again()
        follower.caught_up(px.url)
        follower.stop()
        relay.close()
        last = state(px.url)["seq"]
    seqs = follower.seqs()
    assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs) and seqs[-1] == last
    start_gap, overrun_gap = follower.gaps()
    assert start_gap.first_seq == seqs[0] > 0  # joined after the ring had moved on
    assert overrun_gap.first_seq == last - 4 and overrun_gap.state is not None and overrun_gap.state["seq"] >= last - 4
    after = seqs[seqs.index(overrun_gap.first_seq):]
    assert after == list(range(overrun_gap.first_seq, last + 1))
    df, metadata = read_log(saved)
    gaps = df.filter(df["kind"] == "gap")
    # The log starts from the state read at the join (its snapshot, docs/semantics.md §7), not before it.
    joined = metadata["snapshot"]["seq"]
    assert start_gap.state is not None and joined == start_gap.state["seq"] >= start_gap.first_seq - 1
    assert gaps["seq"].to_list() == [joined, overrun_gap.first_seq - 1] and df["seq"][0] == joined
    assert df["seq"].is_sorted() and df["t"].is_sorted()


def test_close_from_another_thread_ends_an_idle_stream(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        follower = Follower(px.url)
        wait_for(lambda: "live" in follower.states(), what="the connection")
        started = time.monotonic()
        follower.stop()
        # At once, not at the next keepalive (15 s) or the idle timeout (45 s); a loaded machine may take a second or two.
        assert time.monotonic() - started < 3.0


def test_events_carry_their_seq_as_id_and_keepalives_flow(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, keepalive_s=0.05) as px:
        ask(px.url, 1)
        with httpx.Client(verify=TLS, timeout=5) as client, client.stream("GET", f"{px.url}/v1/sfq/events") as response:
            lines = []
            for line in response.iter_lines():
                lines.append(line)
                if line == ": keepalive":
                    break
        with httpx.Client(verify=TLS, timeout=5) as client, connect_sse(client, "GET", f"{px.url}/v1/sfq/events") as source:
            sse = source.iter_sse()
            run, first = next(sse), next(sse)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert lines[0] == "event: run" and lines[1].startswith('data: {"run": ') and lines[2] == ""
    assert lines[3] == "id: 0" and lines[4].startswith('data: {"seq":0,')
    assert run.event == "run" and first.event == "message"
    assert first.id == "0" and first.json()["kind"] == "arrive"


def raw_frames(lines: Iterator[str]) -> list[dict[str, str]]:
    """The stream as the wire has it: each SSE frame's fields, read to the stream's end."""
    frames: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if fields:
                frames.append(fields)
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value
    return frames


def test_each_connection_names_its_run_and_a_clean_stop_says_bye(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    runs = []
    for _ in range(2):  # two runs of the proxy, one after the other
        with running_proxy(upstream_url, keys_path) as px:
            ask(px.url, 1)
            run = state(px.url)["run"]
            client = httpx.Client(verify=TLS, timeout=10)
            with client.stream("GET", f"{px.url}/v1/sfq/events") as response:
                lines = response.iter_lines()
                assert next(lines) == "event: run"
                opening = json.loads(next(lines).removeprefix("data: "))
                px.stop()  # SIGTERM's path: drain, then end the stream
                frames = raw_frames(lines)
            client.close()
        assert opening["run"] == run and abs(opening["started"] - time.time()) < 60
        events, bye = frames[:-1], frames[-1]
        assert [int(f["id"]) for f in events] == list(range(len(events))) and all("event" not in f for f in events)
        assert bye["event"] == "bye" and "id" not in bye and json.loads(bye["data"]) == {"run": run, "reason": "shutdown"}
        runs.append(run)
    assert runs[0] != runs[1]


def test_a_crash_ends_the_stream_without_bye(fake, keys_path: Path, tmp_path: Path) -> None:
    _, upstream_url = fake
    proxy = subprocess.Popen([sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream_url, "--slots", "1",
                              "--keys", str(keys_path), "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    try:
        url = "http://" + proxy.stderr.readline().split("http://")[1].split()[0]  # type: ignore[union-attr]
        with httpx.Client(verify=TLS, timeout=10) as client, client.stream("GET", f"{url}/v1/sfq/events") as response:
            lines = response.iter_lines()
            assert next(lines) == "event: run"
            proxy.kill()
            try:
                rest = list(lines)
            except httpx.RemoteProtocolError:  # the connection broke off mid-stream
                rest = []
    finally:
        proxy.kill()
        proxy.wait(10)
    assert not any(line == "event: bye" for line in rest)
