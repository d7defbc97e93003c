"""The fitted model replayed over the whole recording, for the held-out requests' waits.

The replay runs the recording's arrivals and tokens (never its times) through its balancer,
the proxy's slots as it recorded (under ``--slots auto``, the proxy's controller on the fitted
engine, at most the recorded maximum an upstream; a gateway's log: as many as requests, since
a gateway held nothing back), in front of one engine of the fitted model (docs/semantics.md, "The engine
model in a replay"): each request's start and end are predictions, which the core compares
with the recorded ones (core/analysis/engine_fit/waits.py). Where the recording says what the
engine's prefix cache held (``cached_tokens``), each request prefills only the rest, as the
fit counted it: the measured hits are taken as they were, not predicted.
"""

from __future__ import annotations

import copy
from array import array

from sfqtui.core.analysis.engine_fit.fit import EngineFit
from sfqtui.core.analysis.engine_fit.waits import ReplayedErrors, replayed_errors
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import COMPLETE, START
from sfqtui.core.limits import LimitSettings
from sfqtui.core.limits.slots import parse_slots
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.trace.served import ServedTrace


def replayed(found: ServedTrace, fitted: EngineFit) -> ReplayedErrors:
    """The held-out requests' wait and latency errors, when the fitted model is replayed."""
    trace = computed(found)
    engine, slots = EngineSettings(fitted.model), found.slots if found.slots is not None else len(trace)
    if found.capacity is not None:  # the slots followed the engine: the same controller follows the fitted one
        auto = parse_slots(found.capacity.slots)[1] or LimitSettings()
        engine, slots = EngineSettings(fitted.model, auto=auto), auto.first
    events = Replay(trace, ReplayConfig(slots=slots, engine=engine)).run_all()
    start = [0.0] * len(trace)
    end = [0.0] * len(trace)
    for t, kind, req in zip(events.t, events.kind, events.req):
        if kind == START:
            start[req] = t
        elif kind == COMPLETE:
            end[req] = t
    at = [found.index[i] for i in fitted.order]  # each fitted request's index in the trace, in arrival order
    served = [found.served[i] for i in fitted.order]
    return replayed_errors(served, fitted.lived, fitted.fitted, [start[i] for i in at], [end[i] for i in at],
                           fitted.model.overhead_s)


def computed(found: ServedTrace) -> Trace:
    """The trace as the fit counted it: each request's prompt cut to the tokens its engine
    computed where the recording says what was cached, and no prompt blocks. The fit took the
    hits as measured (none where the engine did not say), so the replayed engines must not find
    them again in a cache of their own, which would count a saving twice or one never measured."""
    trace = copy.copy(found.trace)
    object.__setattr__(trace, "prefix_blocks", None)  # a frozen dataclass: a copy with its columns replaced
    if found.cached is None:
        return trace
    assert found.trace.input_tokens is not None  # served requests have them
    tokens = array(found.trace.input_tokens.typecode, found.trace.input_tokens)
    for i, request in zip(found.index, found.served):
        tokens[i] = request.prefilled_tokens
    object.__setattr__(trace, "input_tokens", tokens)
    return trace
