"""What each request lived through in the engine: how long it waited in the engine's own
queue, how long it ran at each batch size, and the prompts prefilled in the steps it ran in.

A recording knows when each request was sent to the engine and when its answer ended, not
what the engine did in between. With ``places`` (the engine's max_num_seqs) the rest
follows, as the engine's scheduler (docs/engine.md, "The model") would have it: a request
starts at once when a place is free, else waits first-come-first-served for the next
request to end; the running batch is every request started and not yet ended. A
request whose answer ended while it would still have been waiting shows that the engine
had more places than ``places``. With an ``overhead_s`` (the model's request_overhead_ms), a
request reaches the engine's queue that long after it was sent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Served:
    """One request as a recording or a gateway's log saw it (seconds on the recording's clock)."""

    arrival_s: float
    dispatch_s: float  # sent to the engine
    service_s: float  # from dispatch_s until the answer ended, > 0
    input_tokens: int
    output_tokens: int  # > 0
    ttft_s: float | None = None  # first token, seconds after dispatch_s
    cached_tokens: int = 0  # prompt tokens the engine's prefix cache held: not prefilled

    @property
    def prefilled_tokens(self) -> int:
        """The prompt tokens the engine computed."""
        return self.input_tokens - self.cached_tokens

    @property
    def end_s(self) -> float:
        return self.dispatch_s + self.service_s


@dataclass(frozen=True)
class Lived:
    """One request's life in the engine."""

    queued_s: float  # from when it was sent until it started: in the API server (the overhead), then in the engine's queue
    running: tuple[tuple[int, float], ...]  # (batch size, seconds run at that size), each size once
    prefill_tokens: int  # prompt tokens prefilled while it ran: its own and those of the requests that started meanwhile (uncached)
    first_batch: int  # the batch size it started in
    first_prefill: int  # prompt tokens of the requests that started when it did, its own included
    joined: int  # requests already running when it started
    mid_step: bool = False  # it came while a step was under way (the batch running, a place free), and waited for its end
    # Its run as spans of one batch, in order: (batch size, seconds, prompt tokens that joined as the span began (its
    # first step prefills them), the context the batch held as it began and as it ended). The context is each running
    # request's prompt and the tokens it made by then, as if a request made its tokens evenly over its run.
    spans: tuple[tuple[int, float, int, float, float], ...] = ()

    @property
    def run_s(self) -> float:
        return sum(s for _, s in self.running)


def most_in_flight(served: Sequence[Served]) -> int:
    """The most requests the engine held at once (sent and not yet ended)."""
    changes = sorted([(r.end_s, -1) for r in served] + [(r.dispatch_s, 1) for r in served])  # at one instant, ends first
    most = held = 0
    for _, change in changes:
        held += change
        most = max(most, held)
    return most


def lived_through(served: Sequence[Served], places: int, overhead_s: float = 0.0) -> list[Lived] | None:
    """Each request's life with ``places`` places in the batch and ``overhead_s`` on its way to the
    engine, in ``served`` order; None when they cannot explain the recording (an answer ended
    before a place was free for it, or before it reached the engine)."""
    events = sorted([(r.end_s, 0, i) for i, r in enumerate(served)] + [(r.dispatch_s + overhead_s, 1, i) for i, r in enumerate(served)])
    start = [0.0] * len(served)
    at: list[dict[int, float]] = [{} for _ in served]
    prefill = [0] * len(served)
    first_batch = [0] * len(served)
    first_prefill = [0] * len(served)
    joined = [0] * len(served)
    mid_step = [False] * len(served)
    spans: list[list[tuple[int, float, int, float, float]]] = [[] for _ in served]
    queue: deque[int] = deque()
    running: set[int] = set()
    k = 0
    while k < len(events):
        t = events[k][0]
        while k < len(events) and events[k][0] == t:
            _, is_dispatch, i = events[k]
            if is_dispatch:
                queue.append(i)
            elif i in running:
                running.remove(i)
            else:
                return None
            k += 1
        started = []
        while queue and len(running) < places:
            i = queue.popleft()
            start[i] = t
            running.add(i)
            started.append(i)
        brought = sum(served[i].prefilled_tokens for i in started)
        for i in running:
            prefill[i] += brought
        for i in started:
            first_batch[i], first_prefill[i], joined[i] = len(running), brought, len(running) - len(started)
            # Started as it came (not as a place freed, at a step's end) into a running batch: it waited for the step under way.
            mid_step[i] = joined[i] > 0 and t == served[i].dispatch_s + overhead_s
        if k < len(events) and running:
            until = events[k][0]
            n = len(running)
            for i in running:
                at[i][n] = at[i].get(n, 0.0) + (until - t)
            if until > t or brought:
                span = (n, until - t, brought, _context(served, start, running, t), _context(served, start, running, until))
                for i in running:
                    spans[i].append(span)
    return [Lived(start[i] - r.dispatch_s, tuple(sorted(at[i].items())), prefill[i], first_batch[i], first_prefill[i], joined[i],
                  mid_step[i], tuple(spans[i])) for i, r in enumerate(served)]


def _context(served: Sequence[Served], start: Sequence[float], running: set[int], t: float) -> float:
    """The tokens the running requests hold at ``t``: each one's prompt and the tokens it made, evenly over its run."""
    held = 0.0
    for i in running:
        r = served[i]
        run = r.end_s - start[i]
        held += r.input_tokens + (r.output_tokens * (t - start[i]) / run if run > 0 else 0.0)
    return held
