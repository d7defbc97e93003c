"""The proxy's event stream (semantics §8): seq numbers, a ring of recent events, subscribers.

Events are kept as ready-to-send SSE frames, so each is serialised once however many
clients follow the stream. A subscriber is only a cursor (the next seq it wants): a
slow one never holds memory; if the ring overtakes it, it is sent a ``gap`` event and
goes on from the oldest event still held.

Every connection starts with a ``run`` event (SSE type ``run``, no id) naming the run
whose events follow, so a client sees a restart as a new run; a stream the proxy ends on
purpose ends with a ``bye`` event, so a client can tell a clean stop from a crash.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from array import array
from collections.abc import AsyncIterator, Callable

from sfqtui.errors import InputError
from sfqtui.protocol import BOUND, BYE, RUN, TYPED_KINDS, BoundEvent, ByeEvent, Event, RunEvent, gap_event
from sfqtui.proxy.sse import KEEPALIVE, frame

MAX_FRAMES_PER_WRITE = 4096


def new_run_id() -> str:
    return secrets.token_hex(8)


def event_frame(event: Event) -> bytes:
    """A numbered §7 event as the stream sends it: compact JSON, its seq as the id, typed kinds named."""
    kind = event["kind"]
    return frame(json.dumps(event, separators=(",", ":")), id=event["seq"], event=kind if kind in TYPED_KINDS else None)


class EventRing:
    def __init__(self, size: int, run: str | None = None, started: float | None = None) -> None:
        if size < 1:
            raise InputError("the ring must hold at least 1 event")
        self.size = size
        self.run = run or new_run_id()
        self.started = time.time() if started is None else started
        self.next_seq = 0
        self.closed = False
        self._floor = 0  # with events put by seq (a group's stream), the first seq this ring ever held
        self.bound: BoundEvent | None = None  # a group replica's latest bound event (``set_bound``)
        self._bound: bytes | None = None  # ... as an SSE frame
        self.bound_watchers: list[Callable[[BoundEvent], None]] = []  # told each bound event (the --record)
        self._bound_version = 0
        self._frames: list[bytes] = []
        self._times = array("d")
        self._changed = asyncio.Event()
        self._watchers: list[Callable[[Event], None]] = []

    def watch(self, watcher: Callable[[Event], None]) -> None:
        """Call ``watcher`` with every event kept from now on (the --record reads the decisions from them)."""
        self._watchers.append(watcher)

    @property
    def first_seq(self) -> int:
        """The oldest seq still held (``next_seq`` when none is)."""
        return max(self._floor, self.next_seq - self.size)

    @property
    def last_seq(self) -> int:
        return self.next_seq - 1

    @property
    def last_t(self) -> float:
        """The time of the last event held (0 when none is)."""
        return self._times[self.last_seq % self.size] if self.next_seq > self.first_seq else 0.0

    def publish(self, event: Event) -> None:
        """Number the event (sets its ``seq``), keep it, and wake the subscribers."""
        seq = self.next_seq
        event["seq"] = seq
        data = event_frame(event)
        if len(self._frames) < self.size:
            self._frames.append(data)
            self._times.append(event["t"])
        else:
            self._frames[seq % self.size] = data
            self._times[seq % self.size] = event["t"]
        self.next_seq = seq + 1
        for watcher in self._watchers:
            watcher(event)
        self._wake()

    def put(self, seq: int, t: float, event: Event) -> None:
        """Keep an event numbered elsewhere (a group's store, ``seq`` and ``t`` its own); seqs come
        in order, and a jump (events the store trimmed before this replica read them) leaves a gap."""
        if seq < self.next_seq:
            return
        if seq > self.next_seq:
            self._floor = seq
            self._frames, self._times = [b""] * self.size, array("d", bytes(8 * self.size))
        position = seq % self.size
        body = event_frame(event)
        if position < len(self._frames):
            self._frames[position] = body
            self._times[position] = t
        else:
            self._frames.append(body)
            self._times.append(t)
        self.next_seq = seq + 1
        for watcher in self._watchers:
            watcher(event)
        self._wake()

    def restart(self, run: str, started: float) -> None:
        """A new run (a group's store lost its data): the connections of the old one end with
        a bye; what is held is dropped."""
        self.run, self.started = run, started
        self.next_seq, self._floor = 0, 0
        self._frames, self._times = [], array("d")
        self._wake()

    def set_bound(self, bound: str, reason: str) -> None:
        """The group's bound changed (or is first known): ``bound`` (global or suspended) since now
        (Unix time) and since the last event held, ``last_seq``, because of ``reason``."""
        self.bound = {"run": self.run, "bound": bound, "since": time.time(), "since_seq": self.last_seq, "reason": reason}
        self._bound = frame(json.dumps(self.bound), event=BOUND)
        self._bound_version += 1
        for watcher in self.bound_watchers:
            watcher(self.bound)
        self._wake()

    def close(self) -> None:
        """No more events: subscribers end once they have sent what is held."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def run_frame(self) -> bytes:
        run: RunEvent = {"run": self.run, "started": self.started}
        return frame(json.dumps(run), event=RUN)

    def bye_frame(self, reason: str = "shutdown") -> bytes:
        bye: ByeEvent = {"run": self.run, "reason": reason}
        return frame(json.dumps(bye), event=BYE)

    def _read(self, cursor: int) -> bytes:
        end = min(self.next_seq, cursor + MAX_FRAMES_PER_WRITE)
        return b"".join(self._frames[seq % self.size] for seq in range(cursor, end))

    async def subscribe(self, after: int | None, keepalive_s: float) -> AsyncIterator[bytes]:
        """SSE bytes for one client: every event after seq ``after`` (the whole ring when None), then the live tail.

        A cursor behind the ring, or past its end (the client saw a previous run of the
        proxy, whose seq started again from 0), gets a gap event first. The run event comes
        before everything, the bye event after the last event once the ring is closed.
        """
        yield self.run_frame()
        run, bound_sent = self.run, 0
        cursor = self.first_seq if after is None else after + 1
        while True:
            if self.run != run:
                yield self.bye_frame("new_run")
                return
            if self._bound_version != bound_sent and self._bound is not None:
                bound_sent = self._bound_version
                yield self._bound
            if cursor < self.first_seq or cursor > self.next_seq:
                first = self.first_seq
                t = self._times[first % self.size] if first < self.next_seq else None
                yield frame(json.dumps(gap_event(first, t), separators=(",", ":")), id=first - 1)
                cursor = first
            if cursor < self.next_seq:
                chunk = self._read(cursor)
                cursor = min(self.next_seq, cursor + MAX_FRAMES_PER_WRITE)
                yield chunk
                continue
            if self.closed:
                yield self.bye_frame()
                return
            try:
                await asyncio.wait_for(self._changed.wait(), keepalive_s)
            except TimeoutError:
                yield KEEPALIVE
