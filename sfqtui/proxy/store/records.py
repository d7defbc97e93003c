"""The binary records the scripts and the replicas exchange (Lua's ``struct`` on the store's side,
Python's here), so that neither side formats a number as text nor parses one: a double goes as
its 8 bytes and comes back bit for bit. The layouts are ``REQ`` and ``EVENT`` in
``scripts/lib.lua``.

- A request as the store keeps it (``pack_request``): input tokens, cap (-1 if none) and weight
  as doubles, then its id, replica, weight as text (the users' hash keeps it for the snapshot),
  user and scope key, each after its length (``<H``).
- An event (``F.emit``): its kind's code, the length of its request, v, the meter and the
  kind's own numbers (``_NUMBERS_OF``), NaN where a field is null, then the request it is about
  as the store keeps it (a merge's names only its user, weight and replica; an idle reset has
  none; a limit's is its reason and upstream, a space between; a start's, its request and then
  its upstream, the request's length its number). A stream entry's field ``e`` is its events' records one after the other (and ``t``
  their t, one double); a reply gives the dispatches of the caller's requests the same way, in
  one string. ``event`` reads a record as the §7 event it stands for (the group's stream,
  ``group.wire``), ``dispatched`` a reply's dispatches."""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

from sfqtui.protocol import SCHEDULER, Event

_NUMBERS, _LENGTH = struct.Struct("<ddd"), struct.Struct("<H")
_WEIGHT = 2  # the weight's place among a request's numbers
KINDS = ("", "arrive", "dispatch", "complete", "cancel", "idle_reset", "merge", "limit", "start")
ARRIVE, DISPATCH, COMPLETE, CANCEL, IDLE_RESET, MERGE, LIMIT, START = range(1, 9)
OUTCOMES = (None, "lost", "abandoned")
# After each kind's code and its request's length (lib.lua's EVENT): v and the meter, then a
# dispatch's cost, ratio and est_output, a completion's output tokens and outcome, a merge's charge
# and since_seq (an idle reset has only v).
_HEAD = struct.Struct("<BH")
_NUMBERS_OF = {kind: struct.Struct(layout) for kind, layout in
               ((ARRIVE, "<dd"), (DISPATCH, "<ddddd"), (COMPLETE, "<dddB"), (CANCEL, "<dd"), (IDLE_RESET, "<d"), (MERGE, "<dddd"),
                (LIMIT, "<ddd"), (START, "<ddd"))}


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
    """One event record: its kind, the numbers it carries (v, the meter, then its kind's own:
    ``a``, ``b``, ``c``; NaN where absent) and its request (None for an idle reset and a limit;
    a limit's reason and upstream are its ``words``, a start's upstream its one word)."""

    kind: int
    v: float
    meter: float
    a: float
    b: float
    c: float
    request: Request | None
    words: tuple[str, ...] | None = None


def records(data: bytes) -> Iterator[Record]:
    """The records in ``data``, one after the other."""
    offset = 0
    while offset < len(data):
        record, offset = _record(data, offset)
        yield record


def _record(data: bytes, offset: int) -> tuple[Record, int]:
    kind, length = _HEAD.unpack_from(data, offset)
    layout = _NUMBERS_OF[kind]
    numbers = (*layout.unpack_from(data, offset + _HEAD.size), math.nan, math.nan, math.nan, math.nan)
    start = offset + _HEAD.size + layout.size
    v, meter, a, b, c = numbers[:5]
    if kind == LIMIT:
        reason, _, upstream = data[start:start + length].decode().partition(" ")
        return Record(kind, v, meter, a, b, c, None, (reason, upstream)), start + length
    if kind == START:  # its request, then its upstream
        cut = start + int(a)
        return Record(kind, v, meter, a, b, c, unpack_request(data[start:cut]), (data[cut:start + length].decode(),)), start + length
    request = unpack_request(data[start:start + length]) if length else None
    return Record(kind, v, meter, a, b, c, request), start + length


def event(seq: int, t: float, record: Record) -> Event:
    """The §7 event a record stands for, its fields in the order the stream has always sent them."""
    if record.kind == START and record.request is not None:  # as a lone proxy publishes it, with the replica
        started = record.request
        return cast(Event, {"seq": seq, "t": t, "kind": KINDS[record.kind], "scheduler": SCHEDULER, "request_id": started.rid,
                            "user": started.user, "cost": None, "v": None, "meter": None, "deficit": None, "weight": started.weight,
                            "replica": int(started.replica), "upstream": record.words[0] if record.words else None})
    if record.words is not None:  # a limit: as a lone proxy publishes it
        reason, upstream = record.words
        return cast(Event, {"seq": seq, "t": t, "kind": KINDS[record.kind], "scheduler": SCHEDULER, "request_id": None, "user": None,
                            "cost": None, "v": None, "meter": None, "deficit": None, "upstream": upstream, "limit": _whole(record.a),
                            "reason": reason})
    request = record.request
    about: dict[str, Any] = {"request_id": None, "user": None}
    tail: dict[str, Any] = {}
    if request is not None:
        about = {"request_id": request.rid or None, "user": request.user}
        tail = {"weight": request.weight, "replica": int(request.replica)}
    cost = None
    if record.kind == DISPATCH:
        cost = record.a
        tail |= {"ratio": _null(record.b), "est_output": record.c}
    elif record.kind == COMPLETE:
        tail["output_tokens"] = _whole(record.a)
        if record.b:
            tail["outcome"] = OUTCOMES[int(record.b)]
    elif record.kind == MERGE:
        cost = record.a
        tail["since_seq"] = _whole(record.b)
    return cast(Event, {"seq": seq, "t": t, "kind": KINDS[record.kind], "scheduler": SCHEDULER, **about, "cost": cost, "v": record.v,
                        "meter": None if record.kind == IDLE_RESET else _null(record.meter), "deficit": None, **tail})


def dispatch(record: Record) -> tuple[str, str, float] | None:
    """(replica, request id, cost) if the record is a dispatch."""
    if record.kind != DISPATCH or record.request is None:
        return None
    return record.request.replica, record.request.rid, record.a


def dispatched(data: bytes) -> list[tuple[str, float]]:
    """A reply's dispatches for its replica (their events' records, each followed by its request): (request id, cost) each."""
    return [(rid, cost) for _replica, rid, cost in filter(None, map(dispatch, records(data)))]
