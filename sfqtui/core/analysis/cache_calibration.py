"""How the cached input was priced (semantics §14): per user, the cached tokens the balancer
predicted at dispatch (cache-aware pricing) against those its engine actually found, and what
cache-blind pricing charged for input the engine never computed."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError


@dataclass
class UserCache:
    """One user's prompts under cache-aware pricing, in tokens."""

    user: str
    requests: int = 0
    input_tokens: int = 0
    predicted: int = 0  # cached tokens predicted at dispatch (what cache-aware pricing took off)
    cached: int = 0  # cached tokens the engine found when the request started

    @property
    def blind_overcharge(self) -> int:
        """Input tokens cache-blind pricing charges that the engine did not compute."""
        return self.cached

    @property
    def aware_error(self) -> int:
        """Input tokens cache-aware pricing charged beyond what the engine computed: > 0 when it
        predicted fewer cached tokens than there were (overcharged), < 0 when more."""
        return self.cached - self.predicted

    def as_dict(self) -> dict[str, object]:
        return {"requests": self.requests, "input_tokens": self.input_tokens, "predicted_cached": self.predicted,
                "cached": self.cached, "blind_overcharge_tokens": self.blind_overcharge, "aware_error_tokens": self.aware_error}


def cache_calibration(trace: Trace, config: ReplayConfig) -> list[UserCache]:
    """Replay ``trace`` under ``config`` with cache-aware pricing and set, per user, the predicted
    cached tokens against those found; users by most input charged for uncomputed tokens first."""
    if config.engine is None or trace.prefix_blocks is None or trace.input_tokens is None:
        raise InputError("calibrating the prefix cache needs the engine model (--engines N or --engine-model FILE) and a trace "
                         "with prefix_blocks (semantics §14)")
    run = Replay(trace, replace(config, estimator=replace(config.estimator, cache_aware=True), reprice=True))
    users = {name: UserCache(name) for name in trace.users}
    inputs = trace.input_tokens
    for drained in run.drained():
        predicted = drained.pricing.cached if drained.pricing is not None else None
        for req, tokens in (predicted or {}).items():
            figures = users[trace.user_name(req)]
            figures.requests += 1
            figures.input_tokens += max(0, inputs[req])
            figures.predicted += tokens
        for req, tokens in (drained.cached or {}).items():
            users[trace.user_name(req)].cached += tokens
    return sorted((u for u in users.values() if u.requests), key=lambda u: (-u.blind_overcharge, u.user))
