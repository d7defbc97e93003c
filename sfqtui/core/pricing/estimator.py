"""The cost estimator of semantics §6 (article §5.1, §7.4).

    c(r) = a * input_tokens + b * (max_tokens * ratio)       when max_tokens is known
    c(r) = a * input_tokens + b * default_output_tokens      otherwise

``ratio`` estimates sum(actual output) / sum(max_tokens) over completed requests that
carry both numbers. The oracle (``oracle=True``) charges the actual cost
a * input_tokens + b * output_tokens instead: the best any estimator could do
(semantics §10), for reference. The expression is evaluated in exactly this order so that another
implementation can reproduce every charge to the last digit. A charge is fixed when the
request is dispatched and never corrected.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, NamedTuple

from sfqtui.core.requests.trace import Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.errors import InputError

Scope = Literal["global", "model", "user"]
Update = Literal["window", "ema", "cumulative"]
SCOPES: tuple[Scope, ...] = ("global", "model", "user")
UPDATES: tuple[Update, ...] = ("window", "ema", "cumulative")


@dataclass(frozen=True)
class EstimatorParams:
    """Defaults and their sources are in docs/estimator.md."""

    input_weight: float = 1.0
    output_weight: float = 2.0
    scope: Scope = "global"
    update: Update = "window"
    window: int = 1000
    alpha: float = 0.05
    start_ratio: float = 1.0
    default_output_tokens: int = 256
    oracle: bool = False
    cache_aware: bool = False  # charge max(1, input - cached), cached predicted at dispatch (semantics §14)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise InputError(f"estimator scope must be one of {', '.join(SCOPES)}")
        if self.update not in UPDATES:
            raise InputError(f"estimator update must be one of {', '.join(UPDATES)}")
        if self.input_weight < 0 or self.output_weight < 0:
            raise InputError("estimator weights must be >= 0")
        if self.input_weight == 0 and self.output_weight == 0:
            raise InputError("estimator weights cannot both be 0: every cost must be > 0")
        if self.window < 1:
            raise InputError("estimator window must be >= 1 completion")
        if not 0 < self.alpha <= 1:
            raise InputError("estimator alpha must be in (0, 1]")
        if not self.start_ratio > 0:
            raise InputError("estimator start ratio must be > 0")
        if self.default_output_tokens < 0:
            raise InputError("estimator default output tokens must be >= 0")

    def as_dict(self) -> dict[str, object]:
        values = asdict(self)
        if not self.cache_aware:  # unsaid when off: the logs of cache-blind pricing stay as they were
            del values["cache_aware"]
        return values


class _RatioOfSums:
    """sum(output) / sum(max_tokens) over the last ``window`` completions (or all of them)."""

    __slots__ = ("_pairs", "_window", "_out", "_cap", "value")

    def __init__(self, start: float, window: int | None) -> None:
        self._pairs: deque[tuple[int, int]] = deque()
        self._window = window
        self._out = 0
        self._cap = 0
        self.value = start

    def observe(self, output: int, cap: int) -> None:
        self._out += output
        self._cap += cap
        if self._window is not None:
            self._pairs.append((output, cap))
            if len(self._pairs) > self._window:
                old_out, old_cap = self._pairs.popleft()
                self._out -= old_out
                self._cap -= old_cap
        self.value = self._out / self._cap


class _ExponentialAverage:
    __slots__ = ("_alpha", "value")

    def __init__(self, start: float, alpha: float) -> None:
        self._alpha = alpha
        self.value = start

    def observe(self, output: int, cap: int) -> None:
        self.value = (1.0 - self._alpha) * self.value + self._alpha * (output / cap)


class Pricing(NamedTuple):
    """What priced each request, by request index: the ratio (when one was involved), the estimated
    output tokens, and under cache-aware pricing the cached input tokens predicted at dispatch."""

    ratio: dict[int, float]
    est_output: dict[int, float]
    cached: dict[int, int] | None = None


class CostEstimator:
    """Estimates c(r) at dispatch and learns the output ratio from completions.

    ``price`` and ``learn`` work on plain numbers (the proxy prices requests it has never
    seen before). Given the window of a replay, ``cost``, ``observe`` and the charges work
    on request indices of the trace being replayed; ``cost`` records what priced each
    request until ``take_pricing`` hands it over, so a log can record the values it used.
    """

    def __init__(self, params: EstimatorParams, requests: RequestWindow | None = None, columns: frozenset[str] = frozenset()) -> None:
        self.params = params
        self._ratios: dict[Hashable, _RatioOfSums | _ExponentialAverage] = {}
        self._pricing = self._empty_pricing()
        # Cache-aware pricing: the cached input tokens of a request about to be dispatched, as the
        # balancer predicts them (set by the replay's plan from its engines).
        self.cached_of: Callable[[int], int] | None = None
        if requests is None:
            return
        if "input_tokens" not in columns:
            raise InputError("the estimator needs the input_tokens column")
        if params.oracle and "output_tokens" not in columns:
            raise InputError("the oracle estimator needs the output_tokens column: it charges the actual output")
        self._window = requests
        self._has_caps = "max_tokens" in columns
        self._has_outputs = "output_tokens" in columns
        self._by_user = params.scope == "user"
        self._by_model = params.scope == "model" and "model" in columns

    def _ratio(self, key: Hashable) -> _RatioOfSums | _ExponentialAverage:
        ratio = self._ratios.get(key)
        if ratio is None:
            p = self.params
            if p.update == "ema":
                ratio = _ExponentialAverage(p.start_ratio, p.alpha)
            else:
                ratio = _RatioOfSums(p.start_ratio, p.window if p.update == "window" else None)
            self._ratios[key] = ratio
        return ratio

    def ratio(self, key: Hashable = None) -> float:
        """The ratio that would price a request of this scope key now."""
        ratio = self._ratios.get(key)
        return self.params.start_ratio if ratio is None else ratio.value

    def ratios(self) -> dict[Hashable, float]:
        """The learned ratio of every scope key seen so far."""
        return {key: ratio.value for key, ratio in self._ratios.items()}

    def price(self, n_in: int, cap: int | None, key: Hashable = None, actual_output: int | None = None) -> tuple[float, float | None, float]:
        """(cost, ratio used or None, estimated output tokens) of a request at dispatch."""
        p = self.params
        if p.oracle:
            if actual_output is None:
                raise ValueError("the oracle estimator needs the request's actual output tokens")
            est_output: float = actual_output
            ratio = None
        elif cap is None:
            est_output = p.default_output_tokens
            ratio = None
        else:
            ratio = self._ratio(key).value
            est_output = cap * ratio
        return p.input_weight * n_in + p.output_weight * est_output, ratio, est_output

    def learn(self, output: int, cap: int, key: Hashable = None) -> None:
        """A completion that carries both its output and its cap."""
        self._ratio(key).observe(output, cap)

    def take_pricing(self) -> Pricing:
        """What priced the requests priced since the last call (a request priced twice, as
        DRR may, keeps the later values: the ones its dispatch was charged with)."""
        pricing, self._pricing = self._pricing, self._empty_pricing()
        return pricing

    def _empty_pricing(self) -> Pricing:
        return Pricing({}, {}, {} if self.params.cache_aware else None)

    def cost(self, req: int) -> float:
        size = self._window.size
        trace, j = self._window.traces[req // size], req % size
        assert trace is not None and trace.input_tokens is not None  # the constructor refused a trace without input_tokens
        caps, outputs, models = trace.max_tokens, trace.output_tokens, trace.model
        cap = caps[j] if caps is not None else -1
        output = outputs[j] if outputs is not None else -1
        n_in = trace.input_tokens[j]
        if n_in < 0:
            n_in = 0
        cached_of = self.cached_of
        if cached_of is not None:
            cached = cached_of(req)
            predictions = self._pricing.cached
            assert predictions is not None  # cache-aware pricing keeps its predictions
            predictions[req] = cached
            n_in = max(1, n_in - cached)
        key = trace.user[j] if self._by_user else models[j] if self._by_model and models is not None else None
        cost, ratio, est_output = self.price(n_in, None if cap < 0 else cap, key, None if output < 0 else output)
        if ratio is not None:
            self._pricing.ratio[req] = ratio
        self._pricing.est_output[req] = float(est_output)
        return cost

    def observe(self, req: int) -> None:
        """A completion: learn from it when it carries both output_tokens and max_tokens."""
        if not (self._has_caps and self._has_outputs):
            return
        trace, j = self._window.row(req)
        caps, outputs, models = trace.max_tokens, trace.output_tokens, trace.model
        if caps is None or outputs is None:
            return
        cap, output = caps[j], outputs[j]
        if cap < 0 or output < 0:
            return
        key = trace.user[j] if self._by_user else models[j] if self._by_model and models is not None else None
        self._ratio(key).observe(output, cap)

    def upper_bound(self, req: int) -> float:
        """A cost this request can never exceed while ratio <= max(1, start_ratio)."""
        return self._bound(*self._window.row(req))

    def largest_upper_bound(self, trace: Trace) -> float:
        """The largest ``upper_bound`` among a chunk's requests."""
        return max(self._bound(trace, j) for j in range(len(trace)))

    def _bound(self, trace: Trace, j: int) -> float:
        p = self.params
        n_in = max(0, _inputs(trace)[j])
        if p.oracle:
            return p.input_weight * n_in + p.output_weight * max(0, _outputs(trace)[j])
        caps = trace.max_tokens
        cap = caps[j] if caps is not None else -1
        if cap < 0:
            return p.input_weight * n_in + p.output_weight * p.default_output_tokens
        return p.input_weight * n_in + p.output_weight * (cap * max(1.0, p.start_ratio))

    def actual_cost(self, req: int) -> float | None:
        """a * input_tokens + b * output_tokens (semantics §10), when the output is known."""
        trace, j = self._window.row(req)
        outputs = trace.output_tokens
        output = outputs[j] if outputs is not None else -1
        if output < 0:
            return None
        p = self.params
        return p.input_weight * max(0, _inputs(trace)[j]) + p.output_weight * output

    def input_charge(self, req: int) -> float:
        """a * input_tokens: what VTC charges at dispatch (semantics §9)."""
        trace, j = self._window.row(req)
        return self.params.input_weight * max(0, _inputs(trace)[j])

    def output_charge(self, req: int) -> float:
        """b * output_tokens: what VTC charges at completion (semantics §9)."""
        trace, j = self._window.row(req)
        return self.params.output_weight * max(0, _outputs(trace)[j])


def _inputs(trace: Trace) -> Sequence[int]:
    """input_tokens, which the estimator refuses to work without (checked when it is made)."""
    assert trace.input_tokens is not None
    return trace.input_tokens


def _outputs(trace: Trace) -> Sequence[int]:
    """output_tokens, which the oracle and VTC's completion charge need (checked where they are chosen)."""
    assert trace.output_tokens is not None
    return trace.output_tokens
