"""The store's wire format, as a replica reads and writes it: a request as the store keeps it
(``packed``), the group's settings, the state script's reply, the event stream's entries."""

from __future__ import annotations

import json
import struct
from typing import Any, NamedTuple

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.protocol import SCHEDULER, ProxyState, UserState
from sfqtui.proxy.dispatcher import Ticket
from sfqtui.proxy.store.replies import Snapshot

_NUMBERS, _LENGTH = struct.Struct("<ddd"), struct.Struct("<H")
# The layout of the store's keys (sfqtui.proxy.store): a group's settings name it, so that
# replicas of another layout never share a run.
STORE_LAYOUT = 2


def packed(rid: str, replica: str, ticket: Ticket, weight: float) -> bytes:
    """A request as the store keeps it (lib.lua's unpack_req reads it without parsing a number):
    input tokens, cap (-1 if none) and weight as binary doubles (Lua's numbers), then id, replica,
    weight as text (for the events), user, scope key and user as JSON, each after its length."""
    cap = -1 if ticket.max_tokens is None else ticket.max_tokens
    texts = (rid, replica, repr(weight), ticket.user, "" if ticket.scope_key is None else str(ticket.scope_key), json.dumps(ticket.user))
    return _NUMBERS.pack(ticket.input_tokens, cap, weight) + b"".join(_LENGTH.pack(len(b)) + b for b in (t.encode() for t in texts))


def as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def group_settings(slots: int, ring: int, estimator: EstimatorParams, auto_maximum: int | None = None) -> str:
    """What every replica of a group must share, as the store keeps it (JSON). With ``--slots
    auto:MAX`` (``auto_maximum``), slots 0: the store's slots are then the sum of the limits the
    replicas write (``pool``)."""
    priced = {k: v for k, v in estimator.as_dict().items() if k != "oracle"}
    fixed = {"slots": slots} if auto_maximum is None else {"slots": 0, "auto_maximum": auto_maximum}
    return json.dumps({**fixed, "ring": ring, "estimator": priced, "layout": STORE_LAYOUT}, sort_keys=True)


def snapshot(reply: Snapshot) -> ProxyState:
    """The state script's reply as the §8 snapshot (without the bound, which is the replica's own)."""
    users: list[UserState] = [{"user": u.user, "meter": u.meter, "weight": u.weight, "queued": u.queued, "inflight": u.running}
             for u in sorted(reply.users, key=lambda u: u.user)]
    return {"run": reply.run, "seq": reply.seq, "t": reply.t, "scheduler": SCHEDULER, "v": reply.v, "slots": reply.slots,
            "inflight": reply.inflight, "replicas": len(reply.replicas), "users": users}


class StreamEntry(NamedTuple):
    """One entry of the group's event stream: one script's events, their JSON one per line
    (entry id ``<first seq>-<count>``, one t), and its dispatches."""

    entry_id: str
    first_seq: int
    t: float
    events: list[bytes]
    dispatches: list[tuple[int, str, float, str]]  # replica, request id, cost, user


def stream_entry(entry_id: bytes, fields: dict[bytes, bytes]) -> StreamEntry:
    """An entry as XRANGE or XREAD give it (fields ``e``, ``t`` and, if some were dispatches, ``d``)."""
    text = entry_id.decode()
    dispatches = [(replica, rid, cost, user) for replica, rid, cost, user in json.loads(fields[b"d"])] if b"d" in fields else []
    return StreamEntry(text, int(text.partition("-")[0]), float(fields[b"t"]), fields[b"e"].split(b"\n"), dispatches)
