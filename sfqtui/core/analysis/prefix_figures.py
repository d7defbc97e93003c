"""What engines' prefix caches did in a replay (semantics §14): the prompt tokens found cached
(the hit rate, token-weighted as vLLM's prefix-cache counters are, and the prefill tokens they
saved), each user's predicted time to first token, and how long an engine sat idle while
another had requests queued (what placement by prefix must not cause)."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

from sfqtui.core.events import COMPLETE, DISPATCH, START, EventColumns
from sfqtui.core.requests.trace import Trace


def ttft_quantile(values: array, q: float) -> float | None:
    """The q-quantile of ``values`` (the nearest rank; None for none)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class PrefixFigures:
    prompt_tokens: int = 0  # of the requests that started
    cached_tokens: int = 0  # found in the engine's cache: the prefill they saved
    idle_while_queued_s: float = 0.0  # time during which some engine ran nothing while another had a queue
    ttft: dict[str, array] = field(default_factory=dict)  # per user: each started request's first token minus its arrival

    @property
    def hit_rate(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None

    def as_dict(self) -> dict[str, object]:
        return {
            "hit_rate": self.hit_rate,
            "prompt_tokens": self.prompt_tokens,
            "prefill_saved_tokens": self.cached_tokens,
            "idle_while_queued_s": self.idle_while_queued_s,
            "users": {u: {"ttft_p50": ttft_quantile(t, 0.5), "ttft_p99": ttft_quantile(t, 0.99), "ttft_mean": sum(t) / len(t) if t else None}
                      for u, t in sorted(self.ttft.items())},
        }


class PrefixTally:
    """Prefix figures of one replay on engines that model their caches, fed its columns in order."""

    def __init__(self, trace: Trace, engines: int) -> None:
        self.trace = trace
        self.figures = PrefixFigures()
        self._sent = [0] * engines  # dispatched to the engine and not complete
        self._running = [0] * engines
        self._since: float | None = None  # when the current stretch of an idle engine beside a queue began

    def feed(self, columns: EventColumns) -> None:
        trace, figures = self.trace, self.figures
        upstream, cached, first = columns.upstream, columns.cached_tokens, columns.first_token_t
        if upstream is None or cached is None or first is None:
            return
        inputs, arrival = trace.input_tokens, trace.arrival_s
        sent, running = self._sent, self._running
        for k, (t, kind, req) in enumerate(zip(columns.t, columns.kind, columns.req)):
            if kind == START:
                prompt = max(0, inputs[req]) if inputs is not None else 0
                figures.prompt_tokens += prompt
                figures.cached_tokens += cached[k] or 0
                made = first[k]
                if made is not None:
                    figures.ttft.setdefault(trace.user_name(req), array("d")).append(made - arrival[req])
                running[upstream[k]] += 1
            elif kind == DISPATCH:
                sent[upstream[k]] += 1
            elif kind == COMPLETE:
                sent[upstream[k]] -= 1
                running[upstream[k]] -= 1
            else:
                continue
            self._mark(t)

    def _mark(self, t: float) -> None:
        """After an event at ``t``: open or close a stretch of an idle engine beside a queue."""
        queued = any(s > r for s, r in zip(self._sent, self._running))
        idle = any(s == 0 for s in self._sent)
        if queued and idle:
            if self._since is None:
                self._since = t
        elif self._since is not None:
            self.figures.idle_while_queued_s += t - self._since
            self._since = None
