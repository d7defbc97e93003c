"""A validated trace held column by column, in replay order (semantics §1), compactly.

Numbers live in typed arrays (8 bytes each) rather than lists of Python objects, users
as int codes, so a trace of ten million requests fits in a few hundred megabytes.
User codes follow the names' code-point order: comparing codes is comparing ids, which
is the tie rule of semantics §3. Token columns use -1 for null.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

NULL = -1  # a missing token count
OPTIONAL_COLUMNS = ("input_tokens", "max_tokens", "output_tokens", "cost", "service_s", "model", "prefix_blocks", "engine_start_s",
                    "upstream")
# The policy columns of semantics §15, each with the attribute that holds it ("class" is a keyword).
POLICY_COLUMNS = {"priority": "priority", "flow": "flow", "class": "policy_class", "deadline_s": "deadline_s"}


def int_column(values: Sequence[int | None]) -> array[int]:
    """Token counts as array('q') with -1 for null."""
    if isinstance(values, array) and values.typecode == "q":
        return values
    return array("q", (NULL if x is None else int(x) for x in values))


def float_column(values: Sequence[float]) -> array[float]:
    if isinstance(values, array) and values.typecode == "d":
        return values
    return array("d", values)


def codes_of(names: Sequence[str | None]) -> tuple[array, list[str]]:
    """Int codes (-1 for null) into the sorted distinct names."""
    distinct = sorted({n for n in names if n is not None})
    code = {n: i for i, n in enumerate(distinct)}
    return array("i", (-1 if n is None else code[n] for n in names)), distinct


@dataclass(frozen=True)
class PrefixBlocks:
    """Each request's prompt blocks (semantics §14): the chained hashes of its consecutive full
    blocks of ``block_tokens`` tokens, request r's being ``hashes[offsets[r]:offsets[r + 1]]``
    (a request without blocks has none)."""

    hashes: array[int]  # typecode 'Q'
    offsets: array[int]  # typecode 'q', one more than there are requests
    block_tokens: int

    @classmethod
    def of_lists(cls, blocks: Sequence[Sequence[int] | None], block_tokens: int) -> PrefixBlocks:
        hashes, offsets = array("Q"), array("q", [0])
        for listed in blocks:
            hashes.extend(listed or ())
            offsets.append(len(hashes))
        return cls(hashes, offsets, block_tokens)

    def of(self, req: int) -> array[int]:
        """Request ``req``'s blocks."""
        return self.hashes[self.offsets[req]:self.offsets[req + 1]]


@dataclass(frozen=True, init=False)
class Trace:
    """Requests sorted by (arrival_s, row order); index i is request i everywhere in the core.

    ``user`` may be given as names; it is then coded, with ``users`` the names by code.
    ``model`` likewise, with ``models``, and a recording's ``upstream`` with ``upstreams``.
    Optional columns are ``None`` when the file did not have them; ``prefix_blocks`` likewise.
    ``weights`` maps user names to weights. The constructor takes the columns as given; the
    attributes hold them as stored (codes, typed arrays, -1 for a null count).
    """

    request_id: Sequence[str]
    user: Sequence[int]
    arrival_s: array[float]
    input_tokens: array[int] | None
    max_tokens: array[int] | None
    output_tokens: array[int] | None
    cost: array[float] | None
    service_s: array[float] | None
    model: Sequence[int] | None
    prefix_blocks: PrefixBlocks | None
    weights: dict[str, float]
    users: Sequence[str]
    models: Sequence[str]
    priority: array[int] | None  # a null priority is 0
    flow: Sequence[str | None] | None
    policy_class: Sequence[str | None] | None
    deadline_s: array[float] | None  # NaN: no deadline
    engine_start_s: array[float] | None  # a proxy's recording: when its engine began running each request (NaN: it did not say)
    upstream: Sequence[int] | None  # a proxy's recording: where each request was sent, as a code into upstreams (-1: it does not say)
    upstreams: Sequence[str]

    def __init__(
        self,
        request_id: Sequence[str],
        user: Sequence[int] | Sequence[str],
        arrival_s: Sequence[float],
        input_tokens: Sequence[int | None] | None = None,
        max_tokens: Sequence[int | None] | None = None,
        output_tokens: Sequence[int | None] | None = None,
        cost: Sequence[float] | None = None,
        service_s: Sequence[float] | None = None,
        model: Sequence[int] | Sequence[str | None] | None = None,
        weights: dict[str, float] | None = None,
        users: Sequence[str] = (),
        models: Sequence[str] = (),
        prefix_blocks: PrefixBlocks | None = None,
        priority: Sequence[int | None] | None = None,
        flow: Sequence[str | None] | None = None,
        policy_class: Sequence[str | None] | None = None,
        deadline_s: Sequence[float | None] | None = None,
        engine_start_s: Sequence[float | None] | None = None,
        upstream: Sequence[int] | Sequence[str | None] | None = None,
        upstreams: Sequence[str] = (),
    ) -> None:
        put = object.__setattr__
        put(self, "request_id", request_id)
        if users:
            put(self, "user", user)
        else:
            user_codes, users = codes_of(cast(Sequence[str], user))  # without ``users``, ``user`` holds names
            put(self, "user", user_codes)
        put(self, "users", users)
        if model is not None and not models and any(isinstance(m, str) for m in model):
            model_codes, models = codes_of(cast(Sequence[str | None], model))
            put(self, "model", model_codes)
        else:
            put(self, "model", model)
        put(self, "models", models)
        put(self, "arrival_s", float_column(arrival_s))
        for name, ints in (("input_tokens", input_tokens), ("max_tokens", max_tokens), ("output_tokens", output_tokens)):
            put(self, name, None if ints is None else int_column(ints))
        for name, floats in (("cost", cost), ("service_s", service_s)):
            put(self, name, None if floats is None else float_column(floats))
        put(self, "prefix_blocks", prefix_blocks)
        put(self, "weights", {} if weights is None else weights)
        if priority is not None and not (isinstance(priority, array) and priority.typecode == "q"):
            priority = array("q", (0 if p is None else int(p) for p in priority))
        put(self, "priority", priority)
        put(self, "flow", flow)
        put(self, "policy_class", policy_class)
        if deadline_s is not None and not (isinstance(deadline_s, array) and deadline_s.typecode == "d"):
            deadline_s = array("d", (math.nan if d is None else float(d) for d in deadline_s))
        put(self, "deadline_s", deadline_s)
        if engine_start_s is not None and not (isinstance(engine_start_s, array) and engine_start_s.typecode == "d"):
            engine_start_s = array("d", (math.nan if t is None else float(t) for t in engine_start_s))
        if engine_start_s is not None and all(math.isnan(t) for t in engine_start_s):
            engine_start_s = None  # no engine said: as a trace without the column
        put(self, "engine_start_s", engine_start_s)
        if upstream is not None and not upstreams:
            upstream, upstreams = codes_of(cast(Sequence[str | None], upstream))
        if upstream is not None and all(code < 0 for code in cast(Sequence[int], upstream)):
            upstream = None  # no request says where it went: as a trace without the column
        put(self, "upstream", upstream)
        put(self, "upstreams", upstreams)

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def columns(self) -> frozenset[str]:
        """The optional columns this trace has."""
        return frozenset([*(name for name in OPTIONAL_COLUMNS if getattr(self, name) is not None),
                          *(name for name, field in POLICY_COLUMNS.items() if getattr(self, field) is not None)])

    def weight(self, user: str) -> float:
        return self.weights.get(user, 1.0)

    def weights_by_code(self) -> dict[int, float]:
        """The weights keyed by user code, as the schedulers see users in a replay."""
        index = {name: code for code, name in enumerate(self.users)}
        return {index[name]: w for name, w in self.weights.items() if name in index}

    def user_name(self, req: int) -> str:
        return self.users[self.user[req]]
