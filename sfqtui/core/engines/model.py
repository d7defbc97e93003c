"""An engine's parameters (places, KV, step times): one value that the emulated engine serves, a replay runs and a fit produces (docs/engine.md)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from sfqtui.errors import InputError

# The step's shape beyond the model before it (a context term, the prefill outside the slowdown), at values that leave it as it was.
SHAPE_DEFAULTS: dict[str, Any] = {"context_us_per_token": 0.0, "slowed_prefill": True}


@dataclass(frozen=True)
class EngineModel:
    """How the engine batches and how long its steps take (docs/engine.md, "The model").

    A step runs every running sequence one token further; its time is
    ``(decode_ms_per_token / 1000 + prefill_us_per_token / 1e6 * prompt tokens prefilled in it)
    * (1 + batch_slowdown * (running - 1)) + context_us_per_token / 1e6 * context`` where
    ``context`` is the running requests' tokens held (each one's prompt and the tokens it made
    before the step). With ``slowed_prefill`` False the slowdown multiplies the decode term alone
    (an engine that runs prompt tokens and decode tokens as one batch of tokens, as llama.cpp on
    a CPU does). The defaults, 0 and True, are the model before either was added.
    """

    max_num_seqs: int = 6
    kv_tokens: int = 65_536
    prefill_us_per_token: float = 50.0
    decode_ms_per_token: float = 20.0
    batch_slowdown: float = 0.1
    max_queued: int | None = None  # None: the queue has no bound
    output_tokens: int = 256  # a request without max_tokens generates this many (as if ignore_eos)
    # What a request spends in the API server before the engine's queue sees it (HTTP, the chat
    # template, tokenizing): a delay of its own, taken by every request at once.
    request_overhead_ms: float = 0.0
    # µs of a step per token of context the running requests hold (attention reads each one's whole context).
    context_us_per_token: float = 0.0
    slowed_prefill: bool = True  # the batch slowdown multiplies the prefill term too (False: the decode term alone)

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "kv_tokens", "output_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"--{name.replace('_', '-')} {value!r}: must be a whole number of at least 1")
        if self.max_queued is not None and (isinstance(self.max_queued, bool) or not isinstance(self.max_queued, int) or self.max_queued < 0):
            raise InputError(f"--max-queued {self.max_queued!r}: must be a whole number of at least 0")
        if not isinstance(self.slowed_prefill, bool):
            raise InputError(f"slowed_prefill {self.slowed_prefill!r}: must be true or false")
        for name in ("prefill_us_per_token", "decode_ms_per_token", "batch_slowdown", "request_overhead_ms", "context_us_per_token"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
                raise InputError(f"--{name.replace('_', '-')} {value!r}: must be a number of at least 0")

    @property
    def overhead_s(self) -> float:
        """Seconds a request spends in the API server before it joins the engine's queue."""
        return self.request_overhead_ms / 1e3

    @property
    def shaped(self) -> bool:
        """The step's shape is beyond the defaults: a context term, or the prefill outside the slowdown."""
        return bool(self.context_us_per_token) or not self.slowed_prefill

    def step_s(self, running: int, prefilled_tokens: int, context: int = 0) -> float:
        """Seconds one engine step takes with ``running`` sequences, ``prefilled_tokens`` of prompt among them,
        and ``context`` tokens held by them before it (each one's prompt and the tokens it made)."""
        slowed = 1 + self.batch_slowdown * max(0, running - 1)
        if self.slowed_prefill:
            step = (self.decode_ms_per_token / 1e3 + self.prefill_us_per_token / 1e6 * prefilled_tokens) * slowed
        else:
            step = self.decode_ms_per_token / 1e3 * slowed + self.prefill_us_per_token / 1e6 * prefilled_tokens
        return step + self.context_us_per_token / 1e6 * context if self.context_us_per_token else step

    def admits(self, running: int, reserved_kv: int, length: int) -> bool:
        """Whether the queue's head, ``length`` tokens of prompt and output, joins a batch of
        ``running`` requests that reserve ``reserved_kv``: a place and KV for its whole length are
        free. Admission reserves the whole length, so a running request is never preempted; the
        emulated engine and the engines of a replay admit by this rule."""
        return running < self.max_num_seqs and reserved_kv + length <= self.kv_tokens

    def as_dict(self) -> dict[str, Any]:
        """Every parameter, but the step's shape only where it is not the default: a model without it (and a log's
        metadata that records it) reads as it did before the shape was added."""
        values = asdict(self)
        for name, default in SHAPE_DEFAULTS.items():
            if values[name] == default and type(values[name]) is type(default):
                del values[name]
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> EngineModel:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputError(f"unknown engine parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**values)

    @classmethod
    def load(cls, path: Path) -> EngineModel:
        """The model saved as JSON in ``path`` (an object of as_dict's keys, any of them)."""
        return cls.load_fitted(path)[0]

    @classmethod
    def load_fitted(cls, path: Path, option: str = "--model-file") -> tuple[EngineModel, dict[str, Any] | None]:
        """The model saved as JSON in ``path``, and what its ``"fit"`` key says of how it was
        fitted (an object a fit writes beside the parameters; None when there is none).
        Errors name the file as ``option`` gave it."""
        try:
            values = json.loads(path.read_text())
        except OSError as exc:
            raise InputError(f"{option} {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise InputError(f"{option} {path}: not JSON ({exc})") from None
        if not isinstance(values, dict):
            raise InputError(f"{option} {path}: expected a JSON object of engine parameters")
        fit = values.pop("fit", None)
        if fit is not None and not isinstance(fit, dict):
            raise InputError(f"{option} {path}: \"fit\" must be a JSON object (how the model was fitted)")
        try:
            return cls.from_dict(values), fit
        except InputError as exc:
            raise InputError(f"{option} {path}: {exc}") from None
