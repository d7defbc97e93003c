"""One sentence per event, told from the rebuilt state and the scheduler registry.

Nothing here knows a scenario or compares scheduler names: what a sentence says follows
from the scheduler's traits (how it picks, its per-user number, its join rule, what it
charges) and, for DRR's visits, from the shadowed scheduler (sfqtui.core.log.shadow),
whose priced heads show what the visit did between the previous dispatch and this one.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from sfqtui.core.analysis.explain import explain_dispatch
from sfqtui.core.events import ARRIVE, CANCEL, COMPLETE, DISPATCH, GAP, IDLE_RESET, MERGE, SYNC
from sfqtui.core.log.replica_states import ReplicaStates, ReplicaTimeline
from sfqtui.core.log.shadow import Look, Shadow
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import Timeline
from sfqtui.core.numbers import amount, count, distinct
from sfqtui.core.schedulers import DRR
from sfqtui.core.schedulers.registry import SchedulerTraits

VISITS_SHOWN = 3  # failed DRR visits told one by one before the rest are summed up


def narrate(table: EventTable, timeline: Timeline, k: int, shadow: Shadow | None = None,
            replicas: ReplicaStates | None = None) -> str:
    """What event k did and why, in one sentence. In a log of replicas, the sentence names
    the event's replica; with ``replicas`` (each with its own scheduler), it is told from
    that replica's state (a shadow follows one scheduler, so it is not used then)."""
    if not 0 <= k < len(table):
        return "Before the first event: nothing has arrived yet."
    held = table.replica_of(k)
    if held is None:
        return _told(table, timeline, k, shadow, replicas)
    if replicas is not None and replicas.split:
        return f"replica {held}: {_told(table, ReplicaTimeline(replicas, held), k, None, replicas)}"
    return f"replica {held}: {_told(table, timeline, k, shadow, replicas)}"


def _told(table: EventTable, timeline: Timeline, k: int, shadow: Shadow | None, replicas: ReplicaStates | None) -> str:
    kind = table.kind[k]
    if kind == IDLE_RESET:
        return _idle_reset(table, timeline, k)
    if kind == GAP:
        return "Events were lost here (a gap in the live stream): what happened in between is unknown."
    if kind == DISPATCH:
        traits = table.traits
        if traits is not None and traits.picks_smallest:
            return _smallest_pick(table, timeline, k, traits, replicas)
        if shadow is not None and isinstance(shadow.at(k - 1), DRR):
            return _drr_visits(table, k, shadow)
        return _turn(table, timeline, k)
    if kind == ARRIVE:
        return _arrival(table, timeline, k, shadow)
    if kind == COMPLETE:
        return _completion(table, timeline, k)
    if kind == CANCEL:
        return _cancellation(table, timeline, k)
    if kind == SYNC:
        return _sync(table, timeline, k)
    if kind == MERGE:
        return _merge(table, timeline, k)
    return f"{table.kind_name(k)}: {table.request_id(k)} of {table.user_name(k)}"


def _symbol(traits: SchedulerTraits | None, user: str) -> str:
    """The scheduler's per-user symbol for one user: S_i -> S_A."""
    return (traits.value_symbol if traits is not None else "S_i").replace("_i", f"_{user}")


def _request(table: EventTable, code: int) -> str:
    return table.names[code] if table.names is not None else str(code)


def _smallest_pick(table: EventTable, timeline: Timeline, k: int, traits: SchedulerTraits, replicas: ReplicaStates | None) -> str:
    e = explain_dispatch(table, timeline, k, replicas=replicas)
    assert e is not None
    winner = e.user
    symbol = _symbol(traits, winner)
    value = next(c.value for c in e.candidates if c.user == winner)
    if len(e.candidates) == 1:
        choice = f"{winner} is chosen: the only user waiting, {symbol} = {amount(value)}"
    else:
        tied = [c.user for c in e.candidates if c.value == value]
        if len(tied) > 1:
            named = " = ".join(_symbol(traits, u) for u in tied) if len(tied) <= 4 else f"{len(tied)} users' {traits.value_name}s"
            choice = f"{winner} is chosen: {named} = {amount(value)}, a tie broken by user id"
        else:
            runner = next(c for c in e.candidates if c.user != winner)
            value_text, runner_text = distinct(value, runner.value)
            choice = (f"{winner} is chosen: {symbol} = {value_text} is the smallest {traits.value_name} "
                      f"(next: {_symbol(traits, runner.user)} = {runner_text})")
    if traits.virtual_time:
        choice += f", so v = {amount(e.v)}"
    what = "its input " if traits.charges == "actual" else ""
    weight = table.weight(table.user[k])
    charge = amount(e.cost) if weight == 1.0 else f"{amount(e.cost)} / w_{winner} = {amount(e.cost)} / {amount(weight)} = {amount(e.cost / weight)}"
    return f"{choice}; charged {what}{charge}, {symbol} = {amount(e.value_after)}"


def _drr_visits(table: EventTable, k: int, shadow: Shadow) -> str:
    """What the visits did from the previous dispatch to this one: heads that did not fit
    ended their visits; the last head priced is the request sent."""
    before = shadow.at(k - 1)
    assert isinstance(before, DRR)
    resumed, quantum = before.visiting, before.quantum
    grants = {u: quantum * before.weight(u) for u in before.active_list()}
    looks = shadow.looks(k)
    failed = [_failed_visit(table, look, fresh=i > 0 or look.user != resumed, grant=grants[look.user])
              for i, look in enumerate(looks[:-1])]
    if len(failed) > VISITS_SHOWN + 1:
        failed[VISITS_SHOWN:] = [f"{count(len(failed) - VISITS_SHOWN)} more visits end the same way"]
    sent = looks[-1]
    user = sent.user
    if len(looks) > 1 or user != resumed:
        opening = f"{user} gets its quantum {amount(grants[user])}, deficit {amount(sent.credit)}"
    else:
        opening = f"{user}'s visit goes on: deficit {amount(sent.credit)}"
    told = f"{opening} >= {amount(sent.cost)}, sends {_request(table, sent.request)}"
    if shadow.at(k).queued(user):
        told += f", deficit {amount(table.value[k])} left"
    else:
        told += f"; its queue is empty: deficit 0, {user} leaves the list"
    return "; ".join([*failed, told])


def _failed_visit(table: EventTable, look: Look, fresh: bool, grant: float) -> str:
    user = look.user
    head = f"{user} gets its quantum {amount(grant)}, but its head" if fresh else f"{user}'s head"
    return (f"{head} {_request(table, look.request)} costs {amount(look.cost)} > deficit {amount(look.credit)}: "
            f"the visit ends, {user} goes to the tail")


def _turn(table: EventTable, timeline: Timeline, k: int) -> str:
    code = table.user[k]
    user = table.users[code]
    waiting = len(timeline.state_at(k - 1).backlogged())
    how = table.traits.pick_words if table.traits is not None else f"{table.scheduler}'s pick"
    among = f"{count(waiting)} users waiting" if waiting > 1 else "the only user waiting"
    left = timeline.state_at(k).queued[code]
    rest = f"{user} has {count(left)} more waiting" if left else f"{user} has nothing left waiting"
    return f"{user} sends {table.request_id(k)}: {how} ({among}); {rest}"


def _arrival(table: EventTable, timeline: Timeline, k: int, shadow: Shadow | None) -> str:
    traits = table.traits
    code = table.user[k]
    user, request = table.users[code], table.request_id(k)
    symbol = _symbol(traits, user)
    before = timeline.state_at(k - 1)
    queued = before.queued[code] if code < len(before.queued) else 0
    after = table.value[k]
    if queued:
        told = f"{request} of {user} queues behind {count(queued)} of its own waiting request{'s' if queued > 1 else ''}"
        if traits is not None and traits.reading is not None and after == after:
            told += f": no join, {symbol} stays {amount(after)}"
        return told
    if traits is None:
        return f"{user} joins with {request}"
    previous = before.value[code] if code < len(before.value) else float("nan")
    if traits.picks_smallest and traits.virtual_time:
        v = before.v if before.v == before.v else 0.0
        if traits.reset_join:
            forgot = f", forgetting {symbol} = {amount(previous)} (the reset join)" if previous > after else ""
            return f"{user} joins with {request} at v = {amount(after)}{forgot}"
        if previous != previous:
            return f"{user} is new: joins with {request} at v = {amount(after)}"
        return f"{user} joins with {request} at {_rule(traits, user)} = {amount(after)} ({symbol} was {amount(previous)}, v = {amount(v)})"
    if traits.picks_smallest:
        others = [before.value[u] for u in before.backlogged() if u != code]
        if not others:
            return f"{user} joins with {request}: nobody else is waiting to lift it, {symbol} = {amount(after)}"
        own = previous if previous == previous else 0.0
        return (f"{user} joins with {request} at {_rule(traits, user)} = {amount(after)} "
                f"({symbol} was {amount(own)}, the smallest other is {amount(min(others))})")
    drr = shadow.at(k) if shadow is not None else None
    if isinstance(drr, DRR):
        ahead = [u for u in drr.active_list() if u != user]
        behind = f", behind {_listed(ahead)}" if ahead else ""
        return f"{user} joins with {request} at the tail of the active list with deficit 0{behind}"
    return f"{user} joins with {request}: {traits.join_symbols.replace('_i', f'_{user}')}"


def _rule(traits: SchedulerTraits, user: str) -> str:
    """The join rule's right-hand side for one user: max(S_i, v) -> max(S_C, v)."""
    return traits.join_symbols.split("←")[-1].strip().replace("_i", f"_{user}")


def _listed(users: Sequence[Hashable]) -> str:
    names = [str(u) for u in users]
    return ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:3])} and {count(len(names) - 3)} more"


def _idle_reset(table: EventTable, timeline: Timeline, k: int) -> str:
    before = timeline.state_at(k - 1)
    meters = [m for m in before.value if m == m]
    largest = amount(max(meters)) if meters else "-"
    return (f"Nobody is waiting: global idle, v = max(v, max S_i) = {amount(table.v[k])} "
            f"(v was {amount(before.v)}, max S_i = {largest}); the next congestion starts everyone on one line (§2.5)")


def _completion(table: EventTable, timeline: Timeline, k: int) -> str:
    traits = table.traits
    code = table.user[k]
    user, request = table.users[code], table.request_id(k)
    symbol = _symbol(traits, user)
    after = table.value[k]
    if traits is not None and traits.charges == "actual":
        before = timeline.state_at(k - 1).value[code]
        tokens = table.output[table.req[k]]
        what = f"its actual output ({amount(tokens)} tokens)" if tokens == tokens else "its actual output"
        return f"{request} of {user} completes: charged {what}, {symbol} = {amount(before)} + {amount(after - before)} = {amount(after)}"
    told = f"{request} of {user} completes: a slot frees"
    if traits is not None and traits.reading is not None and after == after:
        told += f"; {symbol} stays {amount(after)}"
        if traits.virtual_time:
            told += " (charged once, at dispatch: §2.6)"
    return told


def _sync(table: EventTable, timeline: Timeline, k: int) -> str:
    user = table.users[table.user[k]]
    symbol = _symbol(table.traits, user)
    before, after = distinct(timeline.state_at(k - 1).value[table.user[k]], table.value[k])
    return (f"sync: {symbol} rises from {before} to {after}, the meter published for {user} "
            "plus this replica's charges since (share sync)")


def _merge(table: EventTable, timeline: Timeline, k: int) -> str:
    user = table.users[table.user[k]]
    before, after = distinct(timeline.state_at(k - 1).value[table.user[k]], table.value[k])
    return (f"merge: {_symbol(table.traits, user)} rises from {before} to {after}: a replica back in its group after the "
            f"store was away adds what it charged {user} on its own (the group's bound was suspended until here)")


def _cancellation(table: EventTable, timeline: Timeline, k: int) -> str:
    code = table.user[k]
    user = table.users[code]
    told = f"{table.request_id(k)} of {user} is cancelled before dispatch: no charge"
    if not timeline.state_at(k).queued[code]:
        told += f"; {user} has nothing left waiting"
    return told
