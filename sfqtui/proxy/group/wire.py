"""The store's wire format, as a replica reads and writes it: a request as the store keeps it
(``packed``), the group's settings, the state script's reply, the event stream's entries."""

from __future__ import annotations

import json
import struct
from typing import Any, NamedTuple

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.protocol import SCHEDULER, Event, ProxyState, UserState
from sfqtui.proxy.dispatcher import Ticket
from sfqtui.proxy.store.records import dispatch, pack_request, records
from sfqtui.proxy.store.records import event as as_event
from sfqtui.proxy.store.replies import Snapshot

# The layout of the store's keys and records (sfqtui.proxy.store): a group's settings name it, so
# that replicas of another layout never share a run.
STORE_LAYOUT = 3


def packed(rid: str, replica: str, ticket: Ticket, weight: float) -> bytes:
    """A request as the store keeps it (``records.pack_request``)."""
    scope = "" if ticket.scope_key is None else str(ticket.scope_key)
    return pack_request(rid, replica, ticket.input_tokens, ticket.max_tokens, weight, ticket.user, scope)


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
    """One entry of the group's event stream (entry id ``<first seq>-<count>``): one script's
    events, each with its seq and t, and its dispatches."""

    entry_id: str
    events: list[tuple[int, float, Event]]
    dispatches: list[tuple[str, str, float]]  # replica, request id, cost


def stream_entry(entry_id: bytes, fields: dict[bytes, bytes]) -> StreamEntry:
    """An entry as XRANGE or XREAD give it: fields ``e``, the events' records (``records``), and ``t``."""
    text = entry_id.decode()
    (t,) = struct.unpack("<d", fields[b"t"])
    shown, dispatches = [], []
    for seq, record in enumerate(records(fields[b"e"]), start=int(text.partition("-")[0])):
        shown.append((seq, t, as_event(seq, t, record)))
        if (dispatched := dispatch(record)) is not None:
            dispatches.append(dispatched)
    return StreamEntry(text, shown, dispatches)
