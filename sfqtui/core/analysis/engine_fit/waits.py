"""The held-out requests' waits and latencies, as a replay on the fitted model predicts them
against what was recorded.

A request's **wait** is from its arrival to its start in the engine: the time the balancer
held it (a proxy's recording measures it) and the time it waited in the engine's own queue
(rebuilt from the recording, ``lived``). Its **latency** is from its arrival to the end of its
answer, measured whole. The replay runs every request on the fitted model (the fitted
requests' arrivals and tokens, never their times), so both figures are predictions.
A wait error is relative to the recorded wait, so only requests that waited count: a
request that did not wait has no relative error to give. The API server's time
(request_overhead_ms) is part of every wait, but no queue: a request waited when it waited
beyond it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sfqtui.core.analysis.engine_fit.errors import Errors
from sfqtui.core.analysis.engine_fit.lived import Lived, Served
from sfqtui.core.numbers import counted, percent

WAITED_S = 0.001  # a recorded wait shorter than this is no wait: a recording's clock and the event loop's own delays


@dataclass(frozen=True)
class ReplayedErrors:
    wait: Errors  # over the held-out requests that waited at least WAITED_S
    latency: Errors  # over every held-out request

    def said(self) -> list[str]:
        """The errors in words, median/p90, for the model's JSON."""
        wait = "no wait" if not self.wait.requests else \
            f"wait {percent(self.wait.median)}/{percent(self.wait.p90)} ({counted(self.wait.requests, 'request')} that waited)"
        return [wait, f"arrival to end {percent(self.latency.median)}/{percent(self.latency.p90)}"]

    def as_dict(self) -> dict[str, object]:
        return {"wait_s": self.wait.as_dict(), "latency_s": self.latency.as_dict()}


def replayed_errors(served: Sequence[Served], lived: Sequence[Lived], first_held_out: int,
                    start_s: Sequence[float], end_s: Sequence[float], overhead_s: float = 0.0) -> ReplayedErrors:
    """The errors of a replay's predicted starts and ends (``start_s``, ``end_s``, by request in
    ``served`` order) on the requests from ``first_held_out`` on; ``overhead_s``: the model's request_overhead_ms."""
    waits, latencies = [], []
    for k in range(first_held_out, len(served)):
        request, life = served[k], lived[k]
        waited = request.dispatch_s + life.queued_s - request.arrival_s
        if waited - overhead_s >= WAITED_S:
            waits.append(abs(start_s[k] - request.arrival_s - waited) / waited)
        took = request.end_s - request.arrival_s
        latencies.append(abs(end_s[k] - request.arrival_s - took) / took)
    return ReplayedErrors(Errors.of(waits), Errors.of(latencies))
