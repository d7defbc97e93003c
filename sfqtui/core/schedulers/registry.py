"""Every scheduler and what the rest of sfqtui needs to know about it, in one place.

The CLI's choices, the log's columns, the views' headers, the explainer's reasons and the
audit all read a scheduler's traits from here; no other code compares scheduler names.
A new scheduler is one module in this package and one entry below (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from sfqtui.core.numbers import amount, distinct
from sfqtui.core.schedulers.base import Scheduler, Weights
from sfqtui.core.schedulers.baselines import FIFO, RoundRobin
from sfqtui.core.schedulers.drr import DRR
from sfqtui.core.schedulers.policies import (
    DYNAMO_REASON,
    LITELLM_REASON,
    LLM_D_REASON,
    PolicyBuild,
    Reason,
    build_dynamo,
    build_las,
    build_litellm,
    build_llm_d,
)
from sfqtui.core.schedulers.policy import NO_ATTRIBUTES, PolicyOptions, RequestAttributes
from sfqtui.core.schedulers.sfq import SFQ, SFQReset
from sfqtui.core.schedulers.vtc import VTC
from sfqtui.errors import InputError

# (user, value) of each candidate, smallest (value, user) first; value is the scheduler's
# own number (meter, deficit, counter) or None.
Ranked = Sequence[tuple[str, float | None]]


@dataclass(frozen=True)
class SchedulerTraits:
    """What a scheduler is, for everything that is not the scheduler itself.

    ``reading``: which §7 column its rows fill with its per-user number ("meter",
    "deficit" or None); ``band``: how a view places that number ("virtual": inside
    [v, v + c_max]; "credit": inside [0, c_max]; "lowest": inside [the lowest number among
    the waiting users, that + c_max], for a scheduler that picks the lowest without a v;
    "queue": queue lengths);
    ``charges``: "estimate" (c(r) at dispatch, never corrected) or "actual" (the input
    at dispatch, the actual output at completion); ``audit``: the rule set `check`
    applies (None: only the structure of the log).
    """

    name: str
    title: str
    section: str
    build: Callable[[Weights, float | None], Scheduler]
    reading: Literal["meter", "deficit"] | None
    band: Literal["virtual", "credit", "lowest", "queue"]
    value_name: str  # what its per-user number is, in words
    value_symbol: str
    join_words: str
    join_symbols: str
    pick_words: str
    charges: Literal["estimate", "actual"] = "estimate"
    virtual_time: bool = False  # fills v and has global idle resets (§2.5)
    needs_quantum: bool = False
    renormalisable: bool = False
    audit: Literal["sfq", "drr", "vtc", "bands"] | None = None
    reset_join: bool = False
    picks_smallest: bool = False  # picks the smallest (value, user id)
    extra_columns: tuple[str, ...] = ()  # log columns beyond §7 that its rows fill
    # A policy of semantics §15: built with the requests' attributes and the policy options
    # (``build`` then builds it without them: every request priority 0, its user's flow, one class).
    build_policy: PolicyBuild | None = None
    why: Reason | None = None  # its own wording of a pick, instead of the generic one
    higher_first: bool = True  # its meter is a priority level: the higher served first (else the lower)

    def reason(self, winner: str, ranked: Ranked, cost: float, value_after: float | None) -> str:
        """Why ``winner`` was picked among the ranked candidates, in one sentence."""
        if len(ranked) <= 1:
            return f"{winner} was the only user waiting"
        if self.why is not None:
            return self.why(winner, ranked, cost, value_after)
        if self.picks_smallest:
            smallest = ranked[0][1]
            tied = [u for u, value in ranked if value == smallest]
            if len(tied) > 1:
                return f"tie at {self.value_name} {amount(smallest)} between {', '.join(tied)}: broken by user id, {winner} comes first"
            runner = ranked[1]
            smallest_text, runner_text = distinct(smallest, runner[1])
            return f"smallest {self.value_name}: {winner} at {smallest_text}, next {runner[0]} at {runner_text}"
        if self.band == "credit":
            left = "" if value_after is None else f", {amount(value_after)} left"
            return f"DRR visit: {winner}'s head request ({amount(cost)}) fit its deficit{left}"
        return f"{self.pick_words}: {winner} is next among {len(ranked)} waiting users"


def _drr(weights: Weights, quantum: float | None) -> Scheduler:
    if quantum is None:
        raise ValueError("drr needs a quantum")
    return DRR(quantum, weights)


_SFQ = SchedulerTraits("sfq", "Start-time Fair Queueing", "§2", lambda w, _q: SFQ(w), reading="meter", band="virtual",
                       value_name="meter", value_symbol="S_i",
                       join_words="a user whose queue was empty joins at the larger of its own meter and v",
                       join_symbols="S_i ← max(S_i, v)", pick_words="smallest meter S_i (ties by user id)",
                       virtual_time=True, renormalisable=True, audit="sfq", picks_smallest=True)
_SFQ_RESET = replace(_SFQ, name="sfq-reset", title="SFQ with the reset join (the §2.4 loophole)", section="§2.4", build=lambda w, _q: SFQReset(w),
                     join_words="a user whose queue was empty joins at v, forgetting what it was charged", join_symbols="S_i ← v", reset_join=True)


def _policy(name: str, title: str, build: PolicyBuild, **traits: object) -> SchedulerTraits:
    """A policy of semantics §15: built without attributes, it sees every request at priority 0, in its user's flow and one class."""
    return SchedulerTraits(name, title, "§15", lambda w, q: build(w, q, NO_ATTRIBUTES, PolicyOptions()), build_policy=build,
                           **traits)  # type: ignore[arg-type]  # the traits below, each of its field's type


_BANDS = {"reading": "meter", "band": "queue", "audit": "bands"}
_POLICIES = (
    _policy("llm-d", "llm-d flow control (priority bands, round-robin across flows)", build_llm_d, **_BANDS,
            value_name="band", value_symbol="band",
            join_words="a request joins its flow's queue in its priority band; a flow with a request waiting is in its band's rotation",
            join_symbols="band = priority, rotation by flow id", pick_words="highest band, then the next flow in turn", why=LLM_D_REASON),
    _policy("dynamo", "NVIDIA Dynamo router queue (strict tiers, weighted DRR across classes)", build_dynamo, **_BANDS,
            value_name="tier", value_symbol="tier",
            join_words="a request joins its policy class's queue; classes share by deficit round-robin, tiers strictly",
            join_symbols="tier = priority, DRR by class", pick_words="highest tier, then the next class with credit",
            extra_columns=("credit",), why=DYNAMO_REASON),
    _policy("litellm", "LiteLLM priority queue (lower priority first)", build_litellm, **_BANDS,
            value_name="priority", value_symbol="priority",
            join_words="a request joins one queue ordered by its priority, then its arrival",
            join_symbols="(priority, arrival)", pick_words="lowest priority number, then the oldest",
            why=LITELLM_REASON, higher_first=False),
    _policy("las", "Least attained service (decaying)", build_las, reading="meter", band="lowest",
            value_name="attained service", value_symbol="A_i",
            join_words="a user keeps what it attained, decaying by half every half-life",
            join_symbols="A_i · 2^(-Δt/h)", pick_words="least attained service A_i (ties by user id)", picks_smallest=True),
)

REGISTRY: dict[str, SchedulerTraits] = {
    t.name: t
    for t in (
        _SFQ,
        _SFQ_RESET,
        SchedulerTraits("drr", "Deficit Round Robin", "§4", _drr, reading="deficit", band="credit",
                        value_name="deficit", value_symbol="DC_i",
                        join_words="a user whose queue was empty goes to the tail of the active list with deficit 0",
                        join_symbols="DC_i ← 0, tail", pick_words="the visited user's head request fits its deficit",
                        needs_quantum=True, audit="drr", extra_columns=("credit",)),
        SchedulerTraits("vtc", "Virtual Token Counter", "§6.2", lambda w, _q: VTC(w), reading="meter", band="lowest",
                        value_name="counter", value_symbol="C_i",
                        join_words="a user whose queue was empty is lifted to the smallest counter among the other waiting users",
                        join_symbols="C_i ← max(C_i, min C_j)", pick_words="smallest counter C_i (ties by user id)",
                        charges="actual", audit="vtc", picks_smallest=True),
        SchedulerTraits("fifo", "First In, First Out", "§5 (baseline)", lambda w, _q: FIFO(w), reading=None, band="queue",
                        value_name="queued", value_symbol="queued", join_words="requests wait in one global line",
                        join_symbols="tail of the line", pick_words="FIFO (the oldest waiting request goes first)"),
        SchedulerTraits("rr", "Round Robin (per request)", "§5 (baseline)", lambda w, _q: RoundRobin(w), reading=None,
                        band="queue", value_name="queued", value_symbol="queued",
                        join_words="a user whose queue was empty goes to the tail of the turn order",
                        join_symbols="tail of the turns", pick_words="round robin (one request per waiting user in turn)"),
        *_POLICIES,
    )
}
SCHEDULERS: tuple[str, ...] = tuple(REGISTRY)


ESTIMATING: tuple[str, ...] = tuple(name for name, t in REGISTRY.items() if t.charges == "estimate")  # what `calibrate` can calibrate
SYNCABLE: tuple[str, ...] = tuple(name for name, t in REGISTRY.items() if t.virtual_time)  # meters and v: what share sync exchanges


def traits(name: str) -> SchedulerTraits:
    """The traits of a scheduler by name; InputError naming the choices otherwise."""
    found = REGISTRY.get(name)
    if found is None:
        raise InputError(_unknown([name], SCHEDULERS))
    return found


def check_schedulers(names: Sequence[str], choices: Sequence[str] = SCHEDULERS) -> list[str]:
    """``names`` as a list, if each is one of ``choices``; otherwise the InputError every
    command gives for unknown scheduler names (one line, naming them and the choices)."""
    if not names or any(n not in choices for n in names):
        raise InputError(_unknown(names, choices))
    return list(names)


def _unknown(names: Sequence[str], choices: Sequence[str]) -> str:
    refused = [n for n in names if n not in choices]
    what = "scheduler(s) not available here:" if refused and all(n in REGISTRY for n in refused) else "unknown scheduler(s)"
    return f"{what} {', '.join(refused) or '(none given)'}; choose from {', '.join(choices)}"


def make_scheduler(name: str, weights: Weights | None = None, quantum: float | None = None,
                   attributes: RequestAttributes = NO_ATTRIBUTES, options: PolicyOptions | None = None) -> Scheduler:
    """Build a scheduler by its semantics name. DRR needs ``quantum``; a policy of semantics
    §15 reads its requests' ``attributes`` and its ``options``."""
    found = traits(name)
    if found.build_policy is not None:
        return found.build_policy(weights or {}, quantum, attributes, options or PolicyOptions())
    return found.build(weights or {}, quantum)
