"""A recording's engine starts and upstreams (docs/traces.md), replayed as start rows and named on its rows.

A proxy's recording keeps when each request's engine began running it (``engine_start_s``,
on ``arrival_s``'s clock), where the upstream said so. A replay of the recording to what
happened (its own slots or recorded capacity, its costs and scheduler: ``ReplayConfig.as_recorded``)
dispatches every request when the proxy did: the recording keeps no dispatch time of its own, it
times a dispatch by the arrival or completion that freed it, where this replay dispatches it too
(and where ``sfqtui fit`` reads it, trace/served.py). Each start is
then placed the recorded delay after its dispatch, that is at its recorded time, held between
its dispatch and its completion (a start reported with the completion, as a group's store
may time it, comes just before it), so that a log's rows stay in time order and each request's
life reads arrive, dispatch, start, complete. Its dispatch and start name the upstream the
recording says it was sent to (its code into ``ReplayPlan.upstream_names``), as a lone proxy's
stream does; its completion names none, as the stream's does not.

``RecordedStarts`` is the loop's ``Servers``: fixed service times (with the recorded capacity,
if any) and a heap of the starts due, whose times the loop visits as it visits completions.
A what-if (other slots, other costs, the engine model) gets none: how the engine would have
started requests dispatched otherwise, or where they would have gone, is not known.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from heapq import heappop, heappush

from sfqtui.core.replay.servers import INF, Capacity, FixedService, Served
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers.base import User


class RecordedStarts:
    """``FixedService`` that also starts each request at its recorded engine start, on its recorded upstream (see the module's docstring)."""

    def __init__(self, fixed: FixedService) -> None:
        self.fixed = fixed
        self.window = fixed.window
        self.starts: list[tuple[float, int, int, User, int, int, int]] = []  # (t, dispatch number, request, user, pool, replica, upstream)
        self.sent = 0

    @property
    def capacity(self) -> Capacity | None:
        return self.fixed.capacity

    def entering(self, trace: Trace) -> Sequence[float]:
        return self.fixed.entering(trace)

    def retired(self, chunks: range) -> None:
        self.fixed.retired(chunks)

    @property
    def next_done(self) -> float:
        done = self.fixed.next_done
        return min(done, self.starts[0][0]) if self.starts else done

    def send(self, now: float, req: int, user: User, pool: int, rep: int) -> int:
        self.fixed.send(now, req, user, pool, rep)
        trace, row = self.window.row(req)
        upstream = -1 if trace.upstream is None else trace.upstream[row]
        if trace.engine_start_s is not None and math.isfinite(recorded := trace.engine_start_s[row]):  # NaN: the engine did not say
            done = now + self.window.services[req // self.window.size][row]  # type: ignore[index]  # a request just dispatched: its chunk is held
            heappush(self.starts, (min(max(now, recorded), math.nextafter(done, -INF)), self.sent, req, user, pool, rep, upstream))
        self.sent += 1
        return upstream

    def finish(self, now: float) -> list[Served]:
        return self.fixed.finish(now)

    def settle(self, now: float) -> list[Served]:
        starts = self.starts
        started: list[Served] = []
        while starts and starts[0][0] <= now:
            _, _, req, user, pool, rep, upstream = heappop(starts)
            started.append((req, user, pool, rep, 0, 0, None, upstream))
        return started

    def unfinished(self) -> Iterator[int]:
        return self.fixed.unfinished()
