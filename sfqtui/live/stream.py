"""The client side of the live stream (semantics §8), for the dashboard: ``EventStream``.

Iterate it from a plain thread; it yields, in order:

- ``pyarrow.Table`` batches of events with the §7 columns and the extras our logs
  carry (``LOG_EXTRAS``; null where an event has none), each collected for at most
  ``batch_s`` (about one repaint) or ``batch_events`` events;
- ``Status`` when the connection changes: "connecting", "live", "reconnecting",
  "lost" (unreachable for ``lost_after_s``; it keeps retrying, and says "live" again
  when it is back). A refused token or a URL that serves no event stream ends the
  iteration with a final "lost";
- ``Gap`` when events are missing (the proxy's ring no longer held them, or the stream
  started after seq 0): the first seq still held, and ``/v1/sfq/state`` read again.

A reader thread follows the stream with sync httpx and httpx-sse. It reconnects with
exponential backoff and resumes with ``Last-Event-ID``, and drops anything it already
had, so no event is lost or yielded twice across reconnects. ``last_seq`` is the seq of
the last event received. ``close()`` may be called from any thread: it shuts the socket
the reader is blocked on, and the iteration ends at once (events received but not yet
yielded are dropped).
"""

from __future__ import annotations

import io
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.json as pa_json
from httpx_sse import ServerSentEvent, connect_sse

from sfqtui.trace.schema import LOG_EXTRAS, LOG_SCHEMA

EVENT_SCHEMA = pa.schema(list(LOG_SCHEMA) + list(LOG_EXTRAS))
_PARSE = pa_json.ParseOptions(explicit_schema=EVENT_SCHEMA, unexpected_field_behavior="ignore")
CONNECTING, LIVE, RECONNECTING, LOST = "connecting", "live", "reconnecting", "lost"
_END = object()


@dataclass(frozen=True)
class Status:
    state: str
    detail: str = ""


@dataclass(frozen=True)
class Gap:
    """Events before ``first_seq`` that this client never received are gone."""

    first_seq: int
    t: float | None  # the time of event first_seq
    state: dict[str, Any] | None  # /v1/sfq/state read after the gap (None if that failed)


class _Refused(Exception):
    """An answer that retrying cannot change (bad token, not an event stream)."""


def proxy_base(url: str) -> str:
    """The proxy's base URL, also when given as the OpenAI base URL (ending in /v1)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class EventStream:
    def __init__(self, base_url: str, token: str | None = None, *, batch_s: float = 0.033, batch_events: int = 4096,
                 backoff_s: tuple[float, float] = (0.25, 5.0), lost_after_s: float = 30.0, idle_timeout_s: float = 45.0,
                 max_pending: int = 200_000) -> None:
        self.base_url = proxy_base(base_url)
        self.last_seq: int | None = None
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        self._batch_s = batch_s
        self._batch_events = batch_events
        self._backoff = backoff_s
        self._lost_after_s = lost_after_s
        self._timeout = httpx.Timeout(10.0, read=idle_timeout_s)
        self._max_pending = max_pending
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._response: httpx.Response | None = None
        self._status = ""
        self._wait = backoff_s[0]
        self._reader = threading.Thread(target=self._read, name="sfqtui-event-stream", daemon=True)

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

    def __iter__(self) -> Iterator[pa.Table | Status | Gap]:
        self._reader.start()
        try:
            yield from self._batches()
        finally:
            self.close()

    def _batches(self) -> Iterator[pa.Table | Status | Gap]:
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

    # The reader's side: one thread that owns the connection and the seq bookkeeping.

    def _set_status(self, state: str, detail: str) -> None:
        if state != self._status:
            self._status = state
            self._queue.put(Status(state, detail))

    def _read(self) -> None:
        self._set_status(CONNECTING, self.base_url)
        failing_since: float | None = None
        try:
            with httpx.Client(timeout=self._timeout, headers=self._headers) as client:
                while not self._stop.is_set():
                    try:
                        self._follow(client)
                        detail = "the proxy ended the stream"
                    except _Refused as exc:
                        self._set_status(LOST, str(exc))
                        return
                    except (httpx.HTTPError, ValueError) as exc:
                        detail = f"{type(exc).__name__}: {exc}"
                    if self._stop.is_set():
                        return
                    now = time.monotonic()
                    if self._status == LIVE:
                        failing_since, self._wait = now, self._backoff[0]
                    failing_since = failing_since or now
                    self._set_status(LOST if now - failing_since >= self._lost_after_s else RECONNECTING, detail)
                    self._stop.wait(self._wait)
                    self._wait = min(self._backoff[1], self._wait * 2)
        finally:
            self._queue.put(_END)

    def _follow(self, client: httpx.Client) -> None:
        """One connection, from Last-Event-ID to its end: queues its events."""
        headers = {} if self.last_seq is None else {"last-event-id": str(self.last_seq)}
        with connect_sse(client, "GET", f"{self.base_url}/v1/sfq/events", headers=headers) as source:
            response = source.response
            if response.status_code in (401, 403):
                raise _Refused(f"HTTP {response.status_code}: the proxy refused the events token")
            if response.status_code == 404:
                raise _Refused(f"HTTP 404: {self.base_url} serves no /v1/sfq/events")
            response.raise_for_status()
            if response.headers.get("content-type", "").partition(";")[0].strip() != "text/event-stream":
                raise _Refused(f"{self.base_url}/v1/sfq/events is not an event stream")
            with self._lock:
                self._response = response
            try:
                if self._stop.is_set():  # close() ran before there was a socket to shut
                    return
                self._set_status(LIVE, self.base_url)
                for sse in source.iter_sse():
                    if self._stop.is_set():
                        return
                    if sse.event == "message":  # §7 events; typed ones (run, bye) are not events of the log
                        self._take(client, sse)
            finally:
                with self._lock:
                    self._response = None

    def _take(self, client: httpx.Client, sse: ServerSentEvent) -> None:
        """Check one event's seq against what came before and queue its JSON, unparsed (the
        consumer parses whole batches in Arrow); only gap events are parsed here."""
        data = sse.data
        if '"gap"' in data:
            event = json.loads(data)
            if event.get("kind") == "gap":
                self.last_seq = event["seq"]
                self._gap(client, event.get("first_seq", event["seq"] + 1), event.get("t"))
                return
        seq = int(sse.id) if sse.id else json.loads(data)["seq"]
        last = self.last_seq
        if last is not None and seq <= last:
            return
        if seq != (0 if last is None else last + 1):
            self._gap(client, seq, json.loads(data).get("t"))
        self.last_seq = seq
        while self._queue.qsize() > self._max_pending and not self._stop.is_set():
            time.sleep(0.005)  # the consumer is behind: let TCP hold the proxy back instead of filling memory
        self._queue.put(data)

    def _gap(self, client: httpx.Client, first_seq: int, t: float | None) -> None:
        try:
            response = client.get(f"{self.base_url}/v1/sfq/state")
            response.raise_for_status()
            state = response.json()
        except (httpx.HTTPError, ValueError):
            state = None
        self._queue.put(Gap(first_seq, t, state))
