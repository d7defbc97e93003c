"""How long a dispatched request holds a slot (semantics §2)."""

from __future__ import annotations

from dataclasses import dataclass

from sfqtui.core.requests.trace import NULL, Trace
from sfqtui.errors import InputError


@dataclass(frozen=True)
class TokenServiceModel:
    """service_s = overhead_s + input_tokens / prefill_tps + output / decode_tps.

    ``output`` is the request's ``output_tokens`` when recorded, else its ``max_tokens``,
    else ``default_output_tokens``. The defaults describe one request on a mid-size model
    served with continuous batching: a prefill of a few thousand tokens per second and a
    per-request decode of tens of tokens per second (docs/semantics-choices.md).
    """

    overhead_s: float = 0.05
    prefill_tps: float = 4000.0
    decode_tps: float = 40.0
    default_output_tokens: int = 256

    def __post_init__(self) -> None:
        if not (self.overhead_s >= 0 and self.prefill_tps > 0 and self.decode_tps > 0):
            raise InputError("service model: overhead must be >= 0 and rates > 0")
        if self.default_output_tokens < 0:
            raise InputError("service model: default output tokens must be >= 0")

    def times(self, trace: Trace) -> list[float]:
        inputs = trace.input_tokens or [0] * len(trace)
        outputs = trace.output_tokens or [NULL] * len(trace)
        caps = trace.max_tokens or [NULL] * len(trace)
        times = []
        for n_in, n_out, cap in zip(inputs, outputs, caps):
            if n_out < 0:  # unknown (NULL): the cap, else the default
                n_out = cap if cap >= 0 else self.default_output_tokens
            times.append(self.overhead_s + max(0, n_in) / self.prefill_tps + n_out / self.decode_tps)
        return times

    def params(self) -> dict[str, float]:
        return {
            "overhead_s": self.overhead_s,
            "prefill_tps": self.prefill_tps,
            "decode_tps": self.decode_tps,
            "default_output_tokens": self.default_output_tokens,
        }


def service_times(trace: Trace, model: TokenServiceModel) -> list[float]:
    """The per-request service times: the trace's service_s column, or else the model's."""
    if trace.service_s is not None:
        return list(trace.service_s)
    return model.times(trace)
