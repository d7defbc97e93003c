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
from collections.abc import AsyncIterator

from sfqtui.errors import InputError
from sfqtui.protocol import BYE, RUN, Event, gap_event
from sfqtui.proxy.sse import KEEPALIVE, frame

MAX_FRAMES_PER_WRITE = 4096


def new_run_id() -> str:
    return secrets.token_hex(8)


class EventRing:
    def __init__(self, size: int, run: str | None = None, started: float | None = None) -> None:
        if size < 1:
            raise InputError("the ring must hold at least 1 event")
        self.size = size
        self.run = run or new_run_id()
        self.started = time.time() if started is None else started
        self.next_seq = 0
        self.closed = False
        self._frames: list[bytes] = []
        self._times = array("d")
        self._changed = asyncio.Event()

    @property
    def first_seq(self) -> int:
        """The oldest seq still held (``next_seq`` when none is)."""
        return max(0, self.next_seq - self.size)

    @property
    def last_seq(self) -> int:
        return self.next_seq - 1

    def publish(self, event: Event) -> None:
        """Number the event (sets its ``seq``), keep it, and wake the subscribers."""
        seq = self.next_seq
        event["seq"] = seq
        data = frame(json.dumps(event, separators=(",", ":")), id=seq)
        if len(self._frames) < self.size:
            self._frames.append(data)
            self._times.append(event["t"])
        else:
            self._frames[seq % self.size] = data
            self._times[seq % self.size] = event["t"]
        self.next_seq = seq + 1
        self._wake()

    def close(self) -> None:
        """No more events: subscribers end once they have sent what is held."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def run_frame(self) -> bytes:
        return frame(json.dumps({"run": self.run, "started": self.started}), event=RUN)

    def bye_frame(self, reason: str = "shutdown") -> bytes:
        return frame(json.dumps({"run": self.run, "reason": reason}), event=BYE)

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
        cursor = self.first_seq if after is None else after + 1
        while True:
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
