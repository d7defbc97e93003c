"""How the registry builds the policies of semantics §15 and words their picks."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from sfqtui.core.schedulers.base import Scheduler, Weights
from sfqtui.core.schedulers.dynamo import Dynamo
from sfqtui.core.schedulers.las import LAS
from sfqtui.core.schedulers.litellm import LiteLLM
from sfqtui.core.schedulers.llm_d import LlmD
from sfqtui.core.schedulers.policy import PolicyOptions, RequestAttributes

Ranked = Sequence[tuple[str, float | None]]
PolicyBuild = Callable[[Weights, float | None, RequestAttributes, PolicyOptions], Scheduler]
Reason = Callable[[str, Ranked, float, float | None], str]


def build_llm_d(weights: Weights, _quantum: float | None, attributes: RequestAttributes, options: PolicyOptions) -> Scheduler:
    return LlmD(weights, attributes, edf=options.ordering == "edf")


def build_dynamo(weights: Weights, _quantum: float | None, attributes: RequestAttributes, options: PolicyOptions) -> Scheduler:
    return Dynamo(weights, attributes, dict(options.class_weights), options.class_quantum)


def build_litellm(weights: Weights, _quantum: float | None, attributes: RequestAttributes, _options: PolicyOptions) -> Scheduler:
    return LiteLLM(weights, attributes)


def build_las(weights: Weights, _quantum: float | None, attributes: RequestAttributes, options: PolicyOptions) -> Scheduler:
    return LAS(weights, attributes, options.half_life_s)


def _level(value: float | None) -> str:
    return "?" if value is None or math.isnan(value) else f"{value:,.0f}"


def band_reason(word: str, higher_first: bool, within: Callable[[str, str, int], str]) -> Reason:
    """Why the winner of a priority policy won: its ``word`` (band, tier, priority) came before
    every other waiting user's, or, at the same level, the policy's rule within one (``within``:
    winner, level, users waiting at that level)."""

    def reason(winner: str, ranked: Ranked, _cost: float, _value_after: float | None) -> str:
        levels = {user: value for user, value in ranked if value is not None and not math.isnan(value)}
        mine = levels.get(winner)
        others = [value for user, value in levels.items() if user != winner]
        if mine is None or not others:
            return within(winner, _level(mine), 1 + len(others))
        best_other = max(others) if higher_first else min(others)
        if (mine > best_other) if higher_first else (mine < best_other):
            return f"{word} {_level(mine)} before {word} {_level(best_other)}: {winner} holds the {'highest' if higher_first else 'lowest'} {word} waiting"
        return within(winner, _level(mine), 1 + sum(1 for value in others if value == mine))

    return reason


LLM_D_REASON = band_reason("band", True, lambda winner, band, n: f"round-robin: flow {winner}'s turn in band {band} ({n} flows waiting in it)")
DYNAMO_REASON = band_reason("tier", True, lambda winner, tier, n: f"deficit round-robin across classes in tier {tier}: "
                            f"{winner}'s class was next with credit for its head")
LITELLM_REASON = band_reason("priority", False, lambda winner, priority, n: f"first come, first served at priority {priority}: {winner}'s request came first")
