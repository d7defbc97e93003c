"""``Batch``: a replica's operations (arrivals, completions, cancellations) made in one turn of
the event loop go to the store as one call of ``scripts/batch.lua``.

Nothing waits to be batched: the call is sent on the loop's next turn, carrying whatever was
added meanwhile, and calls are not kept waiting for earlier ones (several may be in flight). So
an arrival still waits on the store exactly once for its decision, while concurrent arrivals
and completions share one round trip, one pass through redis-py and the script's fixed cost
(reading the run, the membership check, the clock, writing the run, the stream entry). An
operation never depends on one in flight: a request is completed or cancelled only after the
reply (or stream entry) that queued or dispatched it, and after the call that reported its
start (``Group.engine_started``), so the order of concurrent calls does not matter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sfqtui.proxy.store.client import Store
from sfqtui.proxy.store.replies import Answered, Refused

Arg = str | int | bytes
Reply = Answered | Refused


class Batch:
    """``header()`` gives the call's first arguments (run, replica) when it is sent; ``answered``
    is told each reply once, before the operations' futures resolve with it."""

    def __init__(self, store: Store, header: Callable[[], tuple[str, str]], answered: Callable[[Reply], None]) -> None:
        self._store = store
        self._header = header
        self._answered = answered
        self._args: list[Arg] = []
        self._waiting: list[asyncio.Future[Reply]] = []
        self._gathering = False
        self._calls: set[asyncio.Task[None]] = set()
        self.calls = 0
        self.operations = 0

    def add(self, *operation: Arg) -> asyncio.Future[Reply]:
        """Queue one operation (its code and arguments, as batch.lua reads them); the future
        resolves with the call's reply, or fails with StoreAway."""
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._args.extend(operation)
        self._waiting.append(future)
        if not self._gathering:
            self._gathering = True
            task = asyncio.ensure_future(self._send())
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
        return future

    async def _send(self) -> None:
        args, waiting = self._args, self._waiting
        self._args, self._waiting, self._gathering = [], [], False
        self.calls += 1
        self.operations += len(waiting)
        try:
            reply = await self._store.batch(*self._header(), *args)
        except Exception as exc:  # StoreAway, or a script's error (a bug), for every operation it carried
            for future in waiting:
                future.set_exception(exc)
            return
        self._answered(reply)
        for future in waiting:
            future.set_result(reply)

    async def drain(self, timeout_s: float) -> None:
        """Wait for the calls in flight (at shutdown)."""
        if self._calls:
            await asyncio.wait(list(self._calls), timeout=timeout_s)
