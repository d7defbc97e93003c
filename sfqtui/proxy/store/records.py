"""The binary records the scripts and the replicas exchange (Lua's ``struct`` on the store's side,
Python's here), so that neither side formats a number as text nor parses one: a double goes as
its 8 bytes and comes back bit for bit. The layouts are ``S.REQ`` and ``S.EVENT`` in
``scripts/lib.lua``.

- A request as the store keeps it (``pack_request``): input tokens, cap (-1 if none) and weight
  as doubles, then its id, replica, weight as text (the users' hash keeps it for the snapshot),
  user and scope key, each after its length (``<H``).
- An event (``F.emit``): kind and outcome (codes), then t, v, meter, cost, ratio and one more
  number (a dispatch's est_output, a completion's output tokens, a merge's since_seq) as doubles,
  NaN where the field is null, then the request it is about (a merge's names only its user,
  weight and replica; an idle reset's is empty) after its length. ``event`` reads a record as
  the §7 event it stands for (the group's stream, ``group.wire``), ``dispatched`` a reply's."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

from sfqtui.protocol import SCHEDULER, Event

_NUMBERS, _LENGTH = struct.Struct("<ddd"), struct.Struct("<H")
_EVENT = struct.Struct("<BBddddddH")
_CAP, _WEIGHT = 1, 2
KINDS = ("", "arrive", "dispatch", "complete", "cancel", "idle_reset", "merge")
_DISPATCH = KINDS.index("dispatch")
OUTCOMES = (None, "lost", "abandoned")


def pack_request(rid: str, replica: str, input_tokens: int, cap: int | None, weight: float, user: str, scope: str) -> bytes:
    texts = (rid, replica, repr(weight), user, scope)
    return _NUMBERS.pack(input_tokens, -1 if cap is None else cap, weight) + b"".join(_LENGTH.pack(len(b)) + b for b in (t.encode() for t in texts))


class Request(NamedTuple):
    """What an event says of its request: its id ('' for a merge), replica, weight and user."""

    rid: str
    replica: str
    weight: float
    user: str


def unpack_request(data: bytes) -> Request:
    offset, texts = _NUMBERS.size, []
    for _ in range(4):
        (length,) = _LENGTH.unpack_from(data, offset)
        offset += _LENGTH.size + length
        texts.append(data[offset - length:offset].decode())
    rid, replica, _weight_text, user = texts
    return Request(rid, replica, _NUMBERS.unpack_from(data)[_WEIGHT], user)


def _null(x: float) -> float | None:
    return None if math.isnan(x) else x


def _whole(x: float) -> int | None:
    return None if math.isnan(x) else int(x)


class Record(NamedTuple):
    """One event record: its fields as the script wrote them, and its request (None for an idle reset)."""

    kind: int
    outcome: int
    t: float
    v: float
    meter: float
    cost: float
    ratio: float
    extra: float
    request: Request | None


def records(data: bytes) -> Iterator[Record]:
    offset = 0
    while offset < len(data):
        kind, outcome, t, v, meter, cost, ratio, extra, length = _EVENT.unpack_from(data, offset)
        offset += _EVENT.size + length
        request = unpack_request(data[offset - length:offset]) if length else None
        yield Record(kind, outcome, t, v, meter, cost, ratio, extra, request)


def event(seq: int, record: Record) -> Event:
    """The §7 event a record stands for, its fields in the order the stream has always sent them."""
    kind, request = KINDS[record.kind], record.request
    about: dict[str, Any] = {"request_id": None, "user": None}
    tail: dict[str, Any] = {}
    if request is not None:
        about = {"request_id": request.rid or None, "user": request.user}
        tail = {"weight": request.weight, "replica": int(request.replica)}
    if kind == "dispatch":
        tail |= {"ratio": _null(record.ratio), "est_output": record.extra}
    elif kind == "complete":
        tail["output_tokens"] = _whole(record.extra)
        if record.outcome:
            tail["outcome"] = OUTCOMES[record.outcome]
    elif kind == "merge":
        tail["since_seq"] = _whole(record.extra)
    return cast(Event, {"seq": seq, "t": record.t, "kind": kind, "scheduler": SCHEDULER, **about, "cost": _null(record.cost), "v": record.v,
                        "meter": _null(record.meter), "deficit": None, **tail})


def as_json(event: Event) -> bytes:
    """An event as the stream sends it (as a lone proxy's ring writes its own)."""
    return json.dumps(event, separators=(",", ":")).encode()


def dispatch(record: Record) -> tuple[str, str, float] | None:
    """(replica, request id, cost) if the record is a dispatch."""
    if record.kind != _DISPATCH or record.request is None:
        return None
    return record.request.replica, record.request.rid, record.cost


def dispatched(data: list[bytes]) -> list[tuple[str, float]]:
    """A reply's dispatches for its replica (each its event's record): (request id, cost) each."""
    return [(found[1], found[2]) for one in data for record in records(one) if (found := dispatch(record)) is not None]
