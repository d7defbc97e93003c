"""A replica's operations of one turn of its event loop share one store call (batch.lua): the same
decisions as one call per operation, and two replicas' concurrent batches still one SFQ."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.proxy.dispatcher import Ticket
from sfqtui.proxy.group import group_settings, packed
from sfqtui.proxy.group.wire import stream_entry
from sfqtui.proxy.ring import event_frame
from sfqtui.proxy.sse import data_of, events_of
from sfqtui.proxy.store import keys
from sfqtui.proxy.store.client import Store
from sfqtui.proxy.store.replies import Answered, Joined
from tests.proxy.test_proxy_group import USERS, ask, audited
from tests.proxy_fixtures import ended_events, running_group, state

WEIGHTS = {"alice": 2.0, "bob": 1.0, "carol": 0.7}


def sent_data(event: Any) -> str:
    """The data of the frame a replica's ring sends for ``event``."""
    (frame,) = events_of(event_frame(event))
    return data_of(frame)


def request(user: str, n: int) -> Ticket:
    return Ticket(n, user, 10 + 7 * n, 3 + n % 4, None, 0.0)


OUTPUTS = {"r0-1": ""}  # no usage reported: the estimator learns nothing from it


async def run_operations(url: str, grouped: bool) -> tuple[list[dict[str, Any]], list[Any], list[Any]]:
    """Five arrivals on two slots, a cancellation, a completion and a late arrival, then the
    running requests completed until none is left: as one call per operation or, when
    ``grouped``, each step's operations in one call. Returns the events (without t), the
    replies' dispatches and the users' meters and weights as the store keeps them."""
    store = Store(url, 2.0, lambda _seconds: None)
    await store.redis.flushdb()
    settings = group_settings(2, 1000, EstimatorParams())
    joined = await store.join("test/0", secrets.token_hex(8), settings, 5, secrets.token_hex(8), 0, 0, 0, 0)
    assert isinstance(joined, Joined)
    run, replica = joined.run, joined.replica
    requests = {f"r0-{n}": packed(f"r0-{n}", replica, request(user, n), WEIGHTS[user])
                for n, user in enumerate(["alice", "bob", "alice", "carol", "bob", "carol"])}

    def complete(rid: str) -> tuple[str, bytes, int | str, str]:
        return "c", requests[rid], OUTPUTS.get(rid, int(rid[3:]) % 5), "0"

    Operation = tuple[str | bytes | int, ...]
    steps: list[list[Operation]] = [[("a", requests[f"r0-{n}"]) for n in range(5)],
                                    [("x", requests["r0-3"]), complete("r0-0"), ("a", requests["r0-5"])]]
    dispatched: list[Any] = []
    running: set[str] = set()
    while steps:
        step = steps.pop(0)
        for operations in [step] if grouped else [[operation] for operation in step]:
            reply = await store.batch(run, replica, *[arg for operation in operations for arg in operation])
            assert isinstance(reply, Answered), reply
            dispatched += reply.dispatched
            running |= {rid for rid, _ in reply.dispatched}
        running -= {rid for rid, request in requests.items() if any(op[0] == "c" and op[1] == request for op in step)}
        if not steps and running:
            steps.append([complete(rid) for rid in sorted(running)])
    entries: Any = await store.redis.xrange(keys.EVENTS)
    users: Any = await store.redis.hgetall(keys.USERS)
    await store.aclose()
    events = [dict(event) for entry in entries for _, _, event in stream_entry(*entry).events]
    for event in events:
        del event["t"]
    return events, dispatched, sorted(users.items())


@pytest.mark.both_servers
async def test_one_call_decides_as_one_call_per_operation(store: Any) -> None:
    one_each = await run_operations(store.url, grouped=False)
    grouped = await run_operations(store.url, grouped=True)
    events, dispatched, users = grouped
    assert grouped == one_each
    assert {field for field, _ in users} == {f"{kind}:{user}".encode() for kind in "mw" for user in WEIGHTS}
    assert [e["seq"] for e in events] == list(range(len(events)))
    kinds = [e["kind"] for e in events]
    assert kinds.count("dispatch") == 5 and kinds.count("cancel") == 1 and kinds.count("complete") == 5 and kinds.count("arrive") == 6
    assert [e["request_id"] for e in events if e["kind"] == "cancel"] == ["r0-3"]
    assert len(dispatched) == 5  # every dispatch was this replica's


async def test_two_replicas_concurrent_batches_are_one_sfq_with_exact_meters(fake, keys_path: Path, store: Any) -> None:
    upstream, upstream_url = fake
    upstream.most_running = 0
    with running_group(upstream_url, keys_path, store.url, 2, slots=2) as replicas:
        jobs = [ask(replicas[n % 2].url, USERS[n % 3], n, stream=n % 3 == 0) for n in range(36)]
        await asyncio.wait_for(asyncio.gather(*jobs), 60)
        batches = [r.server.proxy.scheduling.batch for r in replicas]  # type: ignore[attr-defined]  # ProxyServer's proxy is a group replica here
        events = ended_events(replicas[0].url, len(jobs))
        snapshot = state(replicas[1].url)
    assert upstream.most_running <= 2, "more requests in flight than the group's slots"
    assert sum(b.operations for b in batches) > sum(b.calls for b in batches), "no call carried more than one operation"
    assert len([e for e in events if e["kind"] == "dispatch"]) == 36
    audited(events)  # one SFQ over both replicas' operations, the audit re-deriving every join, pick and charge exactly
    last_meter = {e["user"]: e["meter"] for e in events if e["meter"] is not None}
    assert {u["user"]: u["meter"] for u in snapshot["users"]} == last_meter
    assert snapshot["inflight"] == 0 and all(u["queued"] == 0 and u["inflight"] == 0 for u in snapshot["users"])


@pytest.mark.both_servers
async def test_a_request_packed_for_the_store_keeps_any_size_and_name(store: Any) -> None:
    """Token counts past 32 bits and users or scope keys in any script reach the store intact."""
    client = Store(store.url, 2.0, lambda _seconds: None)
    joined = await client.join("test/0", secrets.token_hex(8), group_settings(1, 1000, EstimatorParams(scope="model")), 5,
                               secrets.token_hex(8), 0, 0, 0, 0)
    assert isinstance(joined, Joined)
    huge = Ticket(0, "zoë 用户 \"q\"", 3 * 10**12, 10**15, "mödel/x", 0.0)
    reply = await client.batch(joined.run, joined.replica, "a", packed("r0-0", joined.replica, huge, 0.7))
    entries: Any = await client.redis.xrange(keys.EVENTS)
    await client.aclose()
    events = [json.loads(sent_data(event)) for entry in entries for _, _, event in stream_entry(*entry).events]
    dispatch = next(e for e in events if e["kind"] == "dispatch")
    assert dispatch["user"] == huge.user and dispatch["weight"] == 0.7
    assert dispatch["cost"] == 1.0 * 3 * 10**12 + 2.0 * 10**15 * 1.0 and dispatch["est_output"] == 10**15
    assert dispatch["meter"] == dispatch["cost"] / 0.7
    assert reply == Answered([("r0-0", dispatch["cost"])])


@pytest.mark.both_servers
async def test_numbers_reach_the_stream_bit_for_bit_and_read_as_a_lone_proxy_writes_them(store: Any) -> None:
    """No script formats a number: a meter goes to the replicas as its 8 bytes, and the stream's JSON
    has the shortest text that reads back as it (``1.1``, not %.17g's ``1.1000000000000001``), as a
    lone proxy's stream does."""
    client = Store(store.url, 2.0, lambda _seconds: None)
    await client.redis.flushdb()
    joined = await client.join("test/0", secrets.token_hex(8), group_settings(1, 1000, EstimatorParams()), 5, secrets.token_hex(8), 0, 0, 0,
                               "", 0)
    assert isinstance(joined, Joined)
    ticket = Ticket(0, "alice", 5, 3, None, 0.0)  # cost 5 + 2.0 * 3 * 1.0 = 11, weight 10: meter 1.1
    await client.batch(joined.run, joined.replica, "a", packed("r0-0", joined.replica, ticket, 10.0))
    entries: Any = await client.redis.xrange(keys.EVENTS)
    await client.aclose()
    dispatch = next(event for entry in entries for _, _, event in stream_entry(*entry).events if event["kind"] == "dispatch")
    data = sent_data(dispatch).encode()  # what a replica's stream sends, as a lone proxy's ring writes it
    assert dispatch["cost"] == 11 and dispatch["meter"] == 11 / 10.0
    assert b'"cost":11.0,' in data and b'"meter":1.1,' in data
    assert json.loads(data) == dispatch
