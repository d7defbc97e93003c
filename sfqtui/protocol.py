"""The live stream's shared vocabulary (semantics §8): what an event is, the gap event, the
state snapshot, and the stream's typed SSE events (``run`` first on every connection, ``bye``
before a clean end), as TypedDicts: the JSON the stream carries, typed.

The proxy (``sfqtui.proxy``), which publishes the stream, and the dashboard's client
(``sfqtui.attach``), which follows it, both speak it; neither imports the other.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Event(TypedDict):
    """A §7 event as the stream sends it: every §7 column (null where it does not apply to the
    kind), then the extensions our logs carry (``LOG_EXTRAS``) on the kinds that have them."""

    seq: int | None  # None only before the ring numbers it (what a dispatcher's sinks see); an int on the wire
    t: float
    kind: str
    scheduler: str
    request_id: str | None
    user: str | None
    cost: float | None
    v: float | None
    meter: float | None
    deficit: float | None
    weight: NotRequired[float]
    ratio: NotRequired[float | None]
    est_output: NotRequired[float | None]
    output_tokens: NotRequired[int | None]
    replica: NotRequired[int]
    since_seq: NotRequired[int | None]
    outcome: NotRequired[str]
    upstream: NotRequired[str]  # limit and start events, and a lone proxy's dispatches
    predicted_cached_tokens: NotRequired[int]  # dispatches under --placement prefix
    cached_tokens: NotRequired[int]  # complete events whose upstream said what its prefix cache held
    limit: NotRequired[int]  # limit events
    reason: NotRequired[str]  # limit events


class GapEvent(TypedDict):
    """A ``gap`` event (semantics §8): the §7 columns, null but its seq, t, v and scheduler, and the first seq still held."""

    seq: int
    t: float | None  # None when no event is held
    kind: str
    scheduler: str
    request_id: None
    user: None
    cost: None
    v: float | None
    meter: None
    deficit: None
    first_seq: int


class UserState(TypedDict):
    """One user in the §8 state: its meter S_i (None if it never had one), weight, queued and in-flight requests."""

    user: str
    meter: float | None
    weight: float
    queued: int
    inflight: int


class SchedulerState(TypedDict):
    """One SFQ's snapshot as of event ``seq`` (a proxy's state without its run)."""

    seq: int
    t: float
    scheduler: str
    v: float
    slots: int
    inflight: int
    users: list[UserState]


class UpstreamLimit(TypedDict):
    """One upstream's concurrency limit under ``--slots auto`` (the state's ``limits``), with
    what its engine's metrics said last (None: not read, or not exported)."""

    upstream: str  # as /metrics labels it
    limit: int
    maximum: int
    source: str  # "metrics" (the engine's own), "latency" (the gradient), or "probing" (not known yet)
    reason: str  # why it last changed (the limit event's reason)
    running: int | None
    waiting: int | None
    kv_usage: float | None


class UpstreamPlacement(TypedDict):
    """One upstream under ``--placement prefix`` (the state's ``placement``): what was placed
    there since the proxy started, and what the proxy's index said the upstream held of it."""

    upstream: str  # as /metrics labels it
    placed: int  # requests sent there
    prompt_tokens: int  # their prompts' whole blocks, in tokens
    predicted_cached_tokens: int  # of those, the blocks the index said the upstream held, in tokens
    index_blocks: int  # blocks the index holds for it now


class LimitEvent(TypedDict):
    """A ``limit`` event (SSE type ``limit``, with its seq as id): an upstream's limit changed."""

    seq: int | None
    t: float
    kind: str  # "limit"
    scheduler: str
    request_id: None
    user: None
    cost: None
    v: None
    meter: None
    deficit: None
    upstream: str
    limit: int
    reason: str


class StartEvent(TypedDict):
    """A ``start`` event (SSE type ``start``): a request began running in its engine (the engine said when)."""

    seq: int | None
    t: float
    kind: str  # "start"
    scheduler: str
    request_id: str
    user: str
    cost: None
    v: None
    meter: None
    deficit: None
    upstream: str


class ProxyState(TypedDict):
    """The §8 ``/v1/sfq/state`` snapshot. A group replica that has not read the store's state
    yet sends only its run, seq, scheduler, replicas and bound, hence the NotRequired middle."""

    run: str
    seq: int
    t: NotRequired[float]
    scheduler: str
    v: NotRequired[float]
    slots: NotRequired[int]
    inflight: NotRequired[int]
    users: NotRequired[list[UserState]]
    # A replica of a group only:
    replicas: NotRequired[int]
    bound: NotRequired[str]  # GLOBAL or SUSPENDED
    bound_since: NotRequired[float | None]
    bound_since_seq: NotRequired[int | None]
    bound_reason: NotRequired[str | None]
    # --slots auto only: each upstream's limit (slots is then their sum).
    limits: NotRequired[list[UpstreamLimit]]
    placement: NotRequired[list[UpstreamPlacement]]  # --placement prefix


class StateSnapshot(TypedDict):
    """The state a recording that joined late starts from (semantics §7, the metadata's ``snapshot``)."""

    seq: int
    t: NotRequired[float]
    v: float
    inflight: NotRequired[int]
    users: list[UserState]


class BoundFields(TypedDict):
    """A group replica's bound as its state gives it."""

    bound: str
    bound_since: float | None
    bound_since_seq: int | None
    bound_reason: str | None


class RunEvent(TypedDict):
    """The ``run`` SSE event's data."""

    run: str
    started: float


class ByeEvent(TypedDict):
    """The ``bye`` SSE event's data."""

    run: str
    reason: str  # "shutdown" or "new_run"


class BoundEvent(TypedDict):
    """The ``bound`` SSE event's data."""

    run: str
    bound: str  # GLOBAL or SUSPENDED
    since: float  # Unix time
    since_seq: int  # the last seq the replica had then (-1: none)
    reason: str


SCHEDULER = "sfq"
# SSE event types besides the default ("message", which carries the §7 events): a client
# that does not know a type skips it.
RUN = "run"  # first on every connection: {"run": id, "started": unix time}
BYE = "bye"  # last before the proxy ends the stream on purpose: {"run": id, "reason": "shutdown" or "new_run"}
# A replica of a group (--state): whether the group's SFQ bound holds, after run and on every change:
# {"run": id, "bound": "global" or "suspended", "since": unix time, "since_seq": the last seq then, "reason": text}
BOUND = "bound"
GLOBAL, SUSPENDED = "global", "suspended"  # the bound's words (suspended: the store is away, the replica serves on its own)
# A §7 event of kind merge (a replica back in its group, semantics §7) goes as this type, so a
# client that does not know the kind skips it (and sees a gap at its seq); it has its seq as id.
MERGE = "merge"
# Events of kinds limit (an upstream's limit changed, --slots auto) and start (a request began
# running in its engine) go as their own types too, with their seq as id.
LIMIT = "limit"
START = "start"
TYPED_KINDS = (MERGE, LIMIT, START)
# The response header an engine sends to report when a request entered its running batch (Unix
# seconds); sfqtui's emulated engine does, vLLM does not. It comes when the request starts.
ENGINE_START_HEADER = "x-sfqtui-engine-start"


def gap_event(first_seq: int, t: float | None) -> GapEvent:
    """The event that stands for what a client can no longer get: seq ``first_seq - 1``."""
    return {"seq": first_seq - 1, "t": t, "kind": "gap", "scheduler": SCHEDULER, "request_id": None, "user": None,
            "cost": None, "v": None, "meter": None, "deficit": None, "first_seq": first_seq}
