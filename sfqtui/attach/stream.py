"""The client side of the live stream (semantics §8), for the dashboard: ``EventStream``.

Iterate it from a plain thread; it yields, in order:

- ``pyarrow.Table`` batches of events with the §7 columns and the extras our logs
  carry (``LOG_EXTRAS``; null where an event has none), each collected for at most
  ``batch_s`` (about one repaint) or ``batch_events`` events;
- ``Status`` when the connection changes (``STATES``): which URL is followed, why none
  is, and when the next attempt comes;
- ``RunStarted`` before the first event of a proxy run (docs/protocol.md, "Runs"): the
  first run followed, and each new one after a restart; its seqs start again from 0;
- ``Gap`` when events are missing (the proxy's ring no longer held them, or the stream
  started after seq 0): the first seq still held, and ``/v1/sfq/state`` read again;
- ``Bound`` when a replica of a group says whether the group's bound holds (sfqtui.attach.bound).

A reader thread follows the stream with sync httpx and httpx-sse. Given several URLs
(replicas of one group serve the same seqs under the same run id), it follows the first
that answers and, when that one goes away, moves to the next with ``Last-Event-ID``; a
URL that serves another run is not of the group and is not followed. It reconnects with
exponential backoff and drops anything it already had, so no event is lost or yielded
twice across reconnects and failovers. ``last_seq`` is the seq of the last event received.
``close()`` may be called from any thread: the iteration ends at once, whatever the
network does (the reader is a daemon thread; the socket it reads is shut when it has
one), and events received but not yet yielded are dropped.
"""

from __future__ import annotations

import io
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx
import pyarrow as pa
import pyarrow.json as pa_json
from httpx_sse import ServerSentEvent, connect_sse

from sfqtui.attach.bound import Bound, bound_of
from sfqtui.protocol import BOUND, BYE, RUN, TYPED_KINDS, ProxyState, RunEvent
from sfqtui.trace.notices import Notice
from sfqtui.trace.schema import LOG_EXTRAS, LOG_SCHEMA

EVENT_SCHEMA = pa.schema(list(LOG_SCHEMA) + list(LOG_EXTRAS))
_PARSE = pa_json.ParseOptions(explicit_schema=EVENT_SCHEMA, unexpected_field_behavior="ignore")

CONNECTING = "connecting"  # the first attempt, nothing followed yet
LIVE = "live"  # following ``url``
RECONNECTING = "reconnecting"  # the stream was cut without a bye (a crash or the network): retrying
UNREACHABLE = "unreachable"  # no URL answered yet: retrying
STOPPED = "stopped"  # the proxy said bye (a clean shutdown): retrying, for when it is started again
REFUSED = "refused"  # for good: the token was refused, or no URL serves an event stream
STATES = (CONNECTING, LIVE, RECONNECTING, UNREACHABLE, STOPPED, REFUSED)
_END = object()


@dataclass(frozen=True)
class Status(Notice):
    """The connection: ``state`` (one of ``STATES``), ``url`` followed (or last tried),
    ``detail`` (why it is down: the bye's reason, or the last attempt's failure),
    ``retry_at`` (``time.monotonic()`` of the next attempt), ``since`` (``time.time()``
    it went down)."""

    state: str
    detail: str = ""
    url: str = ""
    retry_at: float | None = None
    since: float | None = None


@dataclass(frozen=True)
class RunStarted(Notice):
    """Events of proxy run ``run`` follow (None: a proxy that names no runs restarted).
    ``restarted``: an earlier run was followed; ``state``: /v1/sfq/state as of the run's
    start, when it could be read."""

    run: str | None
    started: float | None  # Unix time
    url: str
    restarted: bool
    state: ProxyState | None = None


@dataclass(frozen=True)
class Gap:
    """Events before ``first_seq`` that this client never received are gone."""

    first_seq: int
    t: float | None  # the time of event first_seq
    state: ProxyState | None  # /v1/sfq/state read after the gap (None if that failed)


class _Refused(Exception):
    """An answer that retrying cannot change (bad token, not an event stream)."""


class _Bye(Exception):
    """The proxy ended the stream on purpose."""


class _OtherRun(Exception):
    """The URL serves another run than the one followed: not the same group."""


class _NewRun(Exception):
    """The followed proxy restarted: its new run is asked for from the start, at once."""


def proxy_base(url: str) -> str:
    """The proxy's base URL, also when given as the OpenAI base URL (ending in /v1)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _reason(exc: Exception) -> str:
    """A failed attempt, in a few words an operator reads."""
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        return "connection refused" if "refused" in text.lower() else f"cannot connect ({text or type(exc).__name__})"
    if isinstance(exc, httpx.TimeoutException):
        return {"ConnectTimeout": "no answer to connect", "ReadTimeout": "no byte for too long"}.get(type(exc).__name__, "timed out")
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError)):
        return "the stream was cut"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class EventStream:
    def __init__(self, urls: str | Sequence[str], token: str | None = None, *, batch_s: float = 0.033, batch_events: int = 4096,
                 backoff_s: tuple[float, float] = (0.25, 5.0), connect_timeout_s: float = 5.0, idle_timeout_s: float = 45.0,
                 max_pending: int = 200_000) -> None:
        self.urls = [proxy_base(url) for url in ([urls] if isinstance(urls, str) else urls)]
        if not self.urls:
            raise ValueError("no URL to follow")
        self.url = self.urls[0]  # the one followed (or to be tried first)
        self.last_seq: int | None = None
        self.run: str | None = None
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        self._batch_s = batch_s
        self._batch_events = batch_events
        self._backoff = backoff_s
        self._timeout = httpx.Timeout(connect_timeout_s, read=idle_timeout_s)
        self._max_pending = max_pending
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._response: httpx.Response | None = None
        self._of_run = False  # the connection read now serves the run followed
        self._status = Status(CONNECTING, url=self.url)
        self._reader = threading.Thread(target=self._read, name="sfqtui-event-stream", daemon=True)

    @property
    def base_url(self) -> str:
        return self.url

    def close(self) -> None:
        """Stop following the stream (from any thread); the iteration ends."""
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._queue.put(_END)

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # The consumer's side: batches out of the reader's queue.

    def __iter__(self) -> Iterator[pa.Table | Status | RunStarted | Gap | Bound]:
        self._queue.put(self._status)
        self._reader.start()
        try:
            yield from self._batches()
        finally:
            self.close()

    def _batches(self) -> Iterator[pa.Table | Status | RunStarted | Gap | Bound]:
        rows: list[str] = []
        deadline = 0.0
        get = self._queue.get
        while not self._stop.is_set():
            try:
                item = get(timeout=max(0.0, deadline - time.monotonic())) if rows else get()
            except queue.Empty:
                yield self._table(rows)
                rows = []
                continue
            if type(item) is str:
                if not rows:
                    deadline = time.monotonic() + self._batch_s
                rows.append(item)
                if len(rows) >= self._batch_events:
                    yield self._table(rows)
                    rows = []
                continue
            if rows:
                yield self._table(rows)
                rows = []
            if item is _END:
                return
            yield item

    @staticmethod
    def _table(rows: list[str]) -> pa.Table:
        """Events (one JSON object each) as a table: Arrow's JSON reader parses them in C++, off the GIL."""
        return pa_json.read_json(io.BytesIO("\n".join(rows).encode()), parse_options=_PARSE)

    # The reader's side: one thread that owns the connections and the seq bookkeeping.

    def _set_status(self, status: Status) -> None:
        if status != self._status:
            self._status = status
            self._queue.put(status)

    def _down(self, state: str, detail: str, retry_at: float | None) -> None:
        """Not following any URL: say why, keeping when it went down."""
        since = self._status.since if self._status.state == state and self._status.since else time.time()
        self._set_status(Status(state, detail, self.url, retry_at, since))

    def _read(self) -> None:
        wait = self._backoff[0]
        refused: dict[str, str] = {}
        down, why = UNREACHABLE, ""  # what a round in which no URL answers reports
        try:
            with httpx.Client(timeout=self._timeout, headers=self._headers) as client:
                while not self._stop.is_set():
                    # One round: the URL followed last (or the first given), then the others in order.
                    start = self.urls.index(self.url)
                    failures: dict[str, str] = {}
                    for url in self.urls[start:] + self.urls[:start]:
                        if url in refused:
                            continue
                        outcome, detail = self._attempt(client, url, refused)
                        if self._stop.is_set():
                            return
                        if outcome == LIVE:  # the proxy restarted: its new run is asked for at once
                            break
                        if self._status.state == LIVE:  # the URL followed went away
                            wait = self._backoff[0]
                            down, why = (STOPPED if outcome == STOPPED else RECONNECTING), detail
                            if len(self.urls) > 1:
                                self._down(down, why, None)  # the others are tried at once
                        failures[url] = detail
                    else:
                        if len(refused) == len(self.urls):
                            self._set_status(Status(REFUSED, "; ".join(refused.values()), self.url))
                            return
                        self._down(down, self._failed_round(down, why, failures), time.monotonic() + wait)
                        self._stop.wait(wait)
                        wait = min(self._backoff[1], wait * 2)
        finally:
            self._queue.put(_END)

    def _failed_round(self, down: str, why: str, failures: dict[str, str]) -> str:
        """Why no URL is followed: after a bye, that (and what the other URLs said); else each URL's failure."""
        if down == STOPPED:
            return "; ".join([why] + [f"{url}: {detail}" for url, detail in failures.items() if url != self.url])
        if len(self.urls) == 1:
            return "; ".join(failures.values())
        return "; ".join(f"{url}: {detail}" for url, detail in failures.items())

    def _attempt(self, client: httpx.Client, url: str, refused: dict[str, str]) -> tuple[str, str]:
        """Follow ``url`` until its stream ends. (LIVE, ""): go on at once (a new run);
        (STOPPED, why): the proxy said bye; else (RECONNECTING, why it failed)."""
        try:
            self._follow(client, url)
            return RECONNECTING, "the stream was cut"
        except _NewRun:
            return LIVE, ""
        except _Bye as bye:
            return STOPPED, f"the proxy stopped ({bye})"
        except (_OtherRun, _Refused) as exc:
            if isinstance(exc, _Refused):
                refused[url] = str(exc)
            return RECONNECTING, str(exc)
        except (httpx.HTTPError, ValueError) as exc:
            return RECONNECTING, _reason(exc)

    def _follow(self, client: httpx.Client, url: str) -> None:
        """One connection, from Last-Event-ID to its end: queues its events."""
        resuming = self.last_seq is not None
        headers = {"last-event-id": str(self.last_seq)} if resuming else {}
        with connect_sse(client, "GET", f"{url}/v1/sfq/events", headers=headers) as source:
            response = source.response
            if response.status_code in (401, 403):
                raise _Refused(f"HTTP {response.status_code} from {url}: " + (
                    "the proxy refused the events token given; give the one it was started with (--events-token) with --token"
                    if self._headers else
                    "the proxy wants its events token; give the one it was started with (--events-token) with --token or SFQTUI_EVENTS_TOKEN"))
            if response.status_code == 404:
                raise _Refused(f"HTTP 404 from {url}: no /v1/sfq/events there, so not an sfqtui proxy at that address; "
                               "give the proxy's base URL, as its --listen says (e.g. http://127.0.0.1:8080)")
            response.raise_for_status()
            if response.headers.get("content-type", "").partition(";")[0].strip() != "text/event-stream":
                raise _Refused(f"{url}/v1/sfq/events is not an event stream: not an sfqtui proxy at that address")
            with self._lock:
                self._response = response
            try:
                if self._stop.is_set():  # close() ran before there was a socket to shut
                    return
                self._of_run = self.run is None  # until its run event says it serves the run followed
                if url == self.url or self.run is None:
                    self._live(url)  # another URL is followed only once its run event says it is of the group
                first_bound = True
                for sse in source.iter_sse():
                    if self._stop.is_set():
                        return
                    if sse.event == "message" or sse.event in TYPED_KINDS:  # §7 events (and merge, start, limit rows)
                        self._take(client, url, sse)
                    elif sse.event == RUN:
                        self._new_connection(client, url, sse.json(), resuming)
                    elif sse.event == BYE:
                        raise _Bye(sse.json().get("reason") or "bye")
                    elif sse.event == BOUND and self._of_run and (bound := bound_of(sse.json(), found=first_bound)) is not None:
                        first_bound = False  # the first is the bound in force at connecting; the others, changes as they happen
                        self._queue.put(bound)
            finally:
                with self._lock:
                    self._response = None

    def _live(self, url: str) -> None:
        self.url = url
        self._set_status(Status(LIVE, url=url))

    def _new_connection(self, client: httpx.Client, url: str, run_event: RunEvent, resuming: bool) -> None:
        """A connection's run event: the same run goes on; the followed URL's new run
        (a restart) starts over from its first event; another URL's is another group."""
        run = run_event.get("run")
        self._of_run = True
        if run == self.run:
            self._live(url)
            return
        if self.run is not None and url != self.url:
            raise _OtherRun(f"{url} serves another run ({run}), not the group of run {self.run}")
        restarted = self.run is not None or self.last_seq is not None
        self.run, self.last_seq = run, None
        self._queue.put(RunStarted(run, run_event.get("started"), url, restarted, self._state(client, url, run)))
        self._live(url)
        if resuming:
            raise _NewRun  # this connection was opened from an old run's Last-Event-ID

    def _take(self, client: httpx.Client, url: str, sse: ServerSentEvent) -> None:
        """Check one event's seq against what came before and queue its JSON, unparsed (the
        consumer parses whole batches in Arrow); only gap events are parsed here."""
        data = sse.data
        if not self._of_run:
            raise _OtherRun(f"{url} names no run: not known to serve run {self.run}")
        if self._status.state != LIVE:
            self._live(url)  # a proxy that sends no run event
        if '"gap"' in data:
            event = json.loads(data)
            if event.get("kind") == "gap":
                if self.last_seq is not None and event["seq"] < self.last_seq:
                    if self.run is not None:
                        return  # a replica behind this client: what it sends next is had already, or follows
                    # A proxy that names no runs restarted: its ring is behind what we had.
                    self.last_seq = None
                    self._queue.put(RunStarted(None, None, url, True, self._state(client, url, None)))
                first_seq = event.get("first_seq", event["seq"] + 1)
                if first_seq > 0 or self.last_seq is not None:
                    self.last_seq = event["seq"]
                    self._gap(client, url, first_seq, event.get("t"))
                return
        seq = int(sse.id) if sse.id else json.loads(data)["seq"]
        last = self.last_seq
        if last is not None and seq <= last:
            return
        if seq != (0 if last is None else last + 1):
            self._gap(client, url, seq, json.loads(data).get("t"))
        self.last_seq = seq
        while self._queue.qsize() > self._max_pending and not self._stop.is_set():
            time.sleep(0.005)  # the consumer is behind: let TCP hold the proxy back instead of filling memory
        self._queue.put(data)

    def _state(self, client: httpx.Client, url: str, run: str | None) -> ProxyState | None:
        """/v1/sfq/state, if it can be read and is of ``run`` (None: any)."""
        try:
            response = client.get(f"{url}/v1/sfq/state")
            response.raise_for_status()
            state = response.json()
        except (httpx.HTTPError, ValueError):
            return None
        ok = isinstance(state, dict) and (run is None or state.get("run") in (None, run))
        return cast("ProxyState", state) if ok else None  # the proxy's word for its fields: readers check what they use

    def _gap(self, client: httpx.Client, url: str, first_seq: int, t: float | None) -> None:
        self._queue.put(Gap(first_seq, t, self._state(client, url, self.run)))
