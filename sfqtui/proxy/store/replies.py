"""The scripts' replies as typed values: ``decoded`` turns what the server sent into bytes, integers
and lists, then one reader per script names its parts (the replies each script's header describes):
texts, and numbers as the binary records of ``records.py``."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sfqtui.proxy.errors import BadReply
from sfqtui.proxy.store.records import dispatched

Value = bytes | int | list["Value"]
Dispatched = list[tuple[str, float]]  # (request id, cost) of each request dispatched for the calling replica


def decoded(raw: object) -> Value:
    if isinstance(raw, bytes | int):
        return raw
    if isinstance(raw, list):
        return [decoded(item) for item in raw]
    raise BadReply(f"the store answered {raw!r}")


def _bytes(value: Value) -> bytes:
    if isinstance(value, bytes):
        return value
    raise BadReply(f"a string expected, the store answered {value!r}")


def _text(value: Value) -> str:
    return _bytes(value).decode()


def _doubles(value: Value, count: int) -> tuple[float, ...]:
    data = _bytes(value)
    if len(data) != 8 * count:
        raise BadReply(f"{count} binary doubles expected, the store answered {data!r}")
    return struct.unpack(f"<{count}d", data)


def _int(value: Value) -> int:
    if isinstance(value, int):
        return value
    raise BadReply(f"an integer expected, the store answered {value!r}")


def _list(value: Value) -> list[Value]:
    if isinstance(value, list):
        return value
    raise BadReply(f"a list expected, the store answered {value!r}")


def _texts(value: Value) -> list[str]:
    return [_text(item) for item in _list(value)]


def _dispatched(value: Value) -> Dispatched:
    return dispatched(_bytes(value))


@dataclass(frozen=True, slots=True)
class Refused:
    """The call's run is not the store's (``run``: the store lost its data), or the replica is no
    member (``gone``: the others settled it when its lease ran out)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Answered:
    """batch.lua's reply."""

    dispatched: Dispatched


@dataclass(frozen=True, slots=True)
class Renewed:
    dispatched: Dispatched
    replicas: list[str]


@dataclass(frozen=True, slots=True)
class Joined:
    """``settled``: the store had settled this replica's previous membership, so its requests still
    running hold slots outside the log."""

    run: str
    started: float
    replica: str
    next_request: int
    replicas: list[str]
    dispatched: Dispatched
    settled: bool


@dataclass(frozen=True, slots=True)
class OtherSettings:
    """The group in the store runs with other settings (its JSON)."""

    settings: str


@dataclass(frozen=True, slots=True)
class UserRow:
    user: str
    meter: float
    weight: float
    queued: int
    running: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """state.lua's §8 snapshot: the run, its last seq, t, v, slots, in flight, replicas, users."""

    run: str
    seq: int
    t: float
    v: float
    slots: int
    inflight: int
    replicas: list[str]
    users: list[UserRow]


def _refused(reply: list[Value]) -> Refused | None:
    return Refused(_text(reply[0])) if len(reply) == 1 and reply[0] in (b"run", b"gone") else None


def answered(value: Value) -> Answered | Refused:
    reply = _list(value)
    return _refused(reply) or Answered(_dispatched(reply[1]))


def renewed(value: Value) -> Renewed | Refused:
    reply = _list(value)
    return _refused(reply) or Renewed(_dispatched(reply[1]), _texts(reply[2]))


def joined(value: Value) -> Joined | OtherSettings:
    reply = _list(value)
    if reply[0] == b"settings":
        return OtherSettings(_text(reply[1]))
    run, started, replica, next_request, replicas, dispatched, settled = reply
    return Joined(_text(run), _doubles(started, 1)[0], _text(replica), _int(next_request), _texts(replicas), _dispatched(dispatched),
                  settled == b"1")


def snapshot(value: Value) -> Snapshot | None:
    """None when the store has no run."""
    reply = _list(value)
    if reply[0] != b"ok":
        return None
    _, run, seq, t_v, slots, inflight, replicas, rows = reply
    users = [UserRow(_text(u), _doubles(m, 1)[0], float(_text(w)), _int(q), _int(r)) for u, m, w, q, r in map(_list, _list(rows))]
    t, v = _doubles(t_v, 2)
    return Snapshot(_text(run), _int(seq), t, v, _int(slots), _int(inflight), _texts(replicas), users)
