"""Following the group's event stream: its events into the replica's ring (and the fairness
window), and the dispatches of this replica's requests that another replica's call made."""

from __future__ import annotations

import asyncio
from typing import Any

from redis.exceptions import RedisError

from sfqtui.protocol import SUSPENDED
from sfqtui.proxy.group.base import GroupBase
from sfqtui.proxy.group.wire import stream_entry
from sfqtui.proxy.store.keys import EVENTS
from sfqtui.proxy.store.replies import Dispatched

READ_BLOCK_S = 1.0


class Following(GroupBase):
    """The group's event stream, read from where this replica left it."""

    async def _load_ring(self) -> None:
        """Start with the events the store still holds (the last --ring), so every replica serves the same stream."""
        entries: Any = await self.store.redis.xrange(EVENTS)
        for entry_id, fields in entries:
            self._take(entry_id, fields, dispatches=False)

    async def _follow(self) -> None:
        """Follow the group's event stream: into the ring, and this replica's dispatches started."""
        reader = self.store.reader(READ_BLOCK_S)
        try:
            while not self._stopped:
                if self.mode == SUSPENDED:
                    await asyncio.sleep(0.05)
                    continue
                try:
                    reply: Any = await reader.xread({EVENTS: self._last_id}, count=4096, block=int(READ_BLOCK_S * 1000))
                except (RedisError, ConnectionError, TimeoutError, OSError):
                    await asyncio.sleep(0.1)
                    continue
                for _stream, entries in reply or ():
                    for entry_id, fields in entries:
                        self._take(entry_id, fields, dispatches=True)
        finally:
            await reader.aclose()

    def _take(self, entry_id: bytes, fields: dict[bytes, bytes], dispatches: bool) -> None:
        """One stream entry (``wire.stream_entry``): its events into the ring, and this replica's dispatches started."""
        entry = stream_entry(entry_id, fields)
        self._last_id = entry.entry_id
        for seq, t, event in entry.events:
            self.ring.put(seq, t, event)
            self.metrics.fairness.see(event)
        if dispatches:
            own: Dispatched = [(rid, cost) for replica, rid, cost in entry.dispatches if replica == self.replica]
            if own:
                self._started_dispatches(own)
