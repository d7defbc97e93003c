"""The cost estimator of semantics §6 (article §5.1, §7.4).

    c(r) = a * input_tokens + b * (max_tokens * ratio)       when max_tokens is known
    c(r) = a * input_tokens + b * default_output_tokens      otherwise

``ratio`` estimates sum(actual output) / sum(max_tokens) over completed requests that
carry both numbers. The expression is evaluated in exactly this order so that another
implementation can reproduce every charge to the last digit. A charge is fixed when the
request is dispatched and never corrected.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Literal

from sfqtui.core.engine.trace import Trace

Scope = Literal["global", "model", "user"]
Update = Literal["window", "ema", "cumulative"]
SCOPES: tuple[str, ...] = ("global", "model", "user")
UPDATES: tuple[str, ...] = ("window", "ema", "cumulative")


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

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"estimator scope must be one of {', '.join(SCOPES)}")
        if self.update not in UPDATES:
            raise ValueError(f"estimator update must be one of {', '.join(UPDATES)}")
        if self.input_weight < 0 or self.output_weight < 0:
            raise ValueError("estimator weights must be >= 0")
        if self.input_weight == 0 and self.output_weight == 0:
            raise ValueError("estimator weights cannot both be 0: every cost must be > 0")
        if self.window < 1:
            raise ValueError("estimator window must be >= 1 completion")
        if not 0 < self.alpha <= 1:
            raise ValueError("estimator alpha must be in (0, 1]")
        if not self.start_ratio > 0:
            raise ValueError("estimator start ratio must be > 0")
        if self.default_output_tokens < 0:
            raise ValueError("estimator default output tokens must be >= 0")

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


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


class CostEstimator:
    """Estimates c(r) at dispatch and learns the output ratio from completions.

    ``ratio_used[i]`` is the ratio that priced request i (``None`` if it was never
    priced, or had no max_tokens), so a log can record the values it used.
    """

    def __init__(self, params: EstimatorParams, trace: Trace) -> None:
        if trace.input_tokens is None:
            raise ValueError("the estimator needs the input_tokens column")
        self.params = params
        self._inputs = trace.input_tokens
        self._caps = trace.max_tokens
        self._outputs = trace.output_tokens
        if params.scope == "user":
            self._keys = trace.user
        elif params.scope == "model" and trace.model is not None:
            self._keys = trace.model
        else:
            self._keys = None
        self._ratios: dict[object, _RatioOfSums | _ExponentialAverage] = {}
        self.ratio_used: list[float | None] = [None] * len(trace)

    def _ratio(self, key: object) -> _RatioOfSums | _ExponentialAverage:
        ratio = self._ratios.get(key)
        if ratio is None:
            p = self.params
            if p.update == "ema":
                ratio = _ExponentialAverage(p.start_ratio, p.alpha)
            else:
                ratio = _RatioOfSums(p.start_ratio, p.window if p.update == "window" else None)
            self._ratios[key] = ratio
        return ratio

    def key(self, req: int) -> object:
        return None if self._keys is None else self._keys[req]

    def cost(self, req: int) -> float:
        p = self.params
        n_in = self._inputs[req] or 0
        cap = None if self._caps is None else self._caps[req]
        if cap is None:
            est_output: float = p.default_output_tokens
        else:
            ratio = self._ratio(self.key(req)).value
            self.ratio_used[req] = ratio
            est_output = cap * ratio
        return p.input_weight * n_in + p.output_weight * est_output

    def observe(self, req: int) -> None:
        """A completion: learn from it when it carries both output_tokens and max_tokens."""
        if self._caps is None or self._outputs is None:
            return
        cap = self._caps[req]
        output = self._outputs[req]
        if cap is None or output is None:
            return
        self._ratio(self.key(req)).observe(output, cap)

    def upper_bound(self, req: int) -> float:
        """A cost this request can never exceed while ratio <= max(1, start_ratio)."""
        p = self.params
        n_in = self._inputs[req] or 0
        cap = None if self._caps is None else self._caps[req]
        if cap is None:
            return p.input_weight * n_in + p.output_weight * p.default_output_tokens
        return p.input_weight * n_in + p.output_weight * (cap * max(1.0, p.start_ratio))
