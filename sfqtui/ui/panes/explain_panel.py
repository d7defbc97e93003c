"""Why: the invariants this event breaks, if any; the candidates of the current dispatch and
why the winner won; and the wait of its request.

In a run of several replicas: the replica that held the request, its own candidates, and
the users then waiting on other replicas with smaller meters (who would have gone first
under one SFQ, and by how much)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from sfqtui.core.analysis.across_replicas import AcrossReplicas, across_replicas
from sfqtui.core.analysis.audit import Violation
from sfqtui.core.analysis.explain import DispatchExplanation, DrrVisit, WaitExplanation, explain_dispatch, explain_wait
from sfqtui.core.analysis.narrate import narrate
from sfqtui.core.log.placements import upstream_title
from sfqtui.core.log.shadow import Shadow
from sfqtui.core.log.timeline import Timeline
from sfqtui.core.numbers import Fixed, amount, count, seconds
from sfqtui.ui.frame import Frame
from sfqtui.ui.widgets.columns import fitted_grid
from sfqtui.ui.widgets.fitted_line import FittedLine
from sfqtui.ui.widgets.text_view import TextView

AHEAD_ROWS = 6
CANDIDATE_ROWS = 10
ELSEWHERE_ROWS = 3


class ExplainPanel(TextView, can_focus=True):
    def show(self, frame: Frame, timeline: Timeline, shadow: Shadow | None = None, broken: Sequence[Violation] = ()) -> None:
        """Explain the frame's event; ``shadow``: the scheduler re-driven from the log (tells
        DRR's visits; may raise ShadowMismatch); ``broken``: the invariants the event breaks."""
        table, k = frame.table, frame.k
        parts: list[Text | FittedLine] = [_broken(v) for v in broken]
        if k < 0:
            parts.append(Text("Before the first event. → steps forward, space plays, ? shows every key."))
        else:
            kind = table.kind_name(k)
            replicas = frame.replicas
            if kind == "dispatch":
                explanation = explain_dispatch(table, timeline, k, frame.state, shadow, replicas)
                assert explanation is not None
                across = across_replicas(timeline, replicas, k) if replicas is not None else None
                parts += _dispatch(explanation, frame, across)
            elif replicas is not None and replicas.split and table.replica_of(k) is not None:  # told from its replica's own state
                parts.append(Text(narrate(table, timeline, k, replicas=replicas), style="yellow" if kind == "idle_reset" else ""))
            else:
                parts.append(_other(frame, timeline, kind))
            request = table.req[k]
            if request >= 0:
                wait = explain_wait(table, request, split=replicas is not None and replicas.split)
                if wait is not None:
                    parts += _wait(wait)
        self.set_text(parts)


def _broken(v: Violation) -> Text:
    return Text.assemble(("✗ breaks ", "bold red"), (v.rule, "bold red reverse"), " ", (v.message, "red"))


def _dispatch(e: DispatchExplanation, frame: Frame, across: AcrossReplicas | None) -> list[Text | FittedLine]:
    held = "" if e.replica is None else f"  on replica {e.replica}"
    title = Text.assemble(("Dispatch ", "bold"), (e.user, "bold reverse"), f"  {e.request}  cost {amount(e.cost)}{held}")
    traits = frame.table.traits
    own = traits is not None and traits.reading is not None
    what = (traits.value_symbol if frame.has_meters else traits.value_name) if traits is not None and own else "queued"
    if e.visit is not None:
        what += " before"  # DRR's own deficits, as they stood before this dispatch
    shown = list(e.candidates[:CANDIDATE_ROWS])
    if not any(c.user == e.user for c in shown):
        shown[-1:] = [c for c in e.candidates if c.user == e.user]
    values = [c.value for c in shown] if own else [float(c.queued) for c in shown]
    # with virtual time, each candidate's lead over v (the winner's meter): only the difference matters (§7.2)
    leads = [None if x is None else x - e.v for x in values] if frame.has_meters and e.v is not None else None
    value, cost, weight = Fixed.of(values), Fixed.of(c.head_cost for c in shown), Fixed.of(c.weight for c in shown)
    lead = Fixed.of(leads or (), scale=e.c_max or None, sign=True)
    rows = []
    for i, c in enumerate(shown):
        mark, style = ("▶", "bold") if c.user == e.user else (" ", "")
        ahead = (lead(leads[i]),) if leads is not None else ()
        rows.append(((mark, c.user, value(values[i]), *ahead, cost(c.head_cost), weight(c.weight), count(c.queued)), style))
    if len(e.candidates) > len(shown):
        rows.append((("", f"… {count(len(e.candidates) - len(shown))} more", "", *(("",) if leads is not None else ()), "", "", ""), "dim"))
    header = (" ", "user", what, *((f"{what} − v",) if leads is not None else ()), "head cost", "w", "queued")
    # A narrow panel leaves out w, then queued, then the absolute value beside its lead, then the head's cost.
    ranks = (None, None, 3 if leads is not None else None, *((None,) if leads is not None else ()), 4, 1, 2)
    table = fitted_grid(header, rows, (False, False, *[True] * (len(header) - 2)), ranks)
    on = f" on replica {e.replica}" if e.replica is not None and frame.replicas is not None and frame.replicas.split else ""
    waiting = Text(f"{count(len(e.candidates))} waiting{on}:", style="dim")
    parts: list[Text | FittedLine] = [title, *_across(across), waiting, *table, Text("why: " + e.reason, style="green")]
    if frame.has_meters and e.v is not None and e.value_after is not None:
        position = e.band_position
        where = "" if position is None else f", {position:.0%} of the way up the band [v, v + c_max]"
        parts.append(Text(f"charge: v ← S_{e.user} = {amount(e.v)}; S_{e.user} ← {amount(e.v)} + {amount(e.cost)}/w = {amount(e.value_after)}{where}"))
    parts += _placed(frame, e.cost)
    if e.visit is not None:
        parts += [Text(f"first {user}'s head ({amount(cost)}) > its deficit {amount(credit)}: the visit ends, {user} goes to the tail", "dim")
                  for user, cost, credit in e.visit.ended[:CANDIDATE_ROWS]]
        parts.append(_visit(e.user, e.visit))
    return parts


def _placed(frame: Frame, cost: float) -> list[Text | FittedLine]:
    """Where the winner went (the log names its upstream), what the proxy's index predicted
    there, and what its engine found cached (engines that model their prefix caches, or a
    proxy's upstream that says so; docs/semantics.md §14) against what it was charged."""
    table = frame.table
    code = table.req[frame.k]
    parts: list[Text | FittedLine] = []
    upstream = table.placements.name_of(code)
    if upstream is not None:
        predicted = table.placements.predicted_of.get(code)
        said = "" if predicted is None else f", where the proxy's index predicted {count(predicted)} tokens of its prompt cached"
        parts.append(Text(f"placed on {upstream_title(upstream)}{said}", style="cyan"))
    if table.cached is not None:
        found = table.cached.get(code)
        if found is not None:
            outcome = f"its engine found {count(found)} tokens of its prompt cached"
        elif frame.connection is not None:  # a proxy hears it in the answer's usage
            outcome = "not complete yet: its upstream says what it found cached when it answers"
        else:
            outcome = "not started yet: its engine has not looked up its prompt"
        parts.append(Text(f"prefix cache: charged {amount(cost)}; {outcome}", style="cyan"))
    return parts


def _across(across: AcrossReplicas | None) -> list[Text | FittedLine]:
    """Who waiting on another replica had a smaller meter: who would have gone first under one SFQ."""
    if across is None:
        return []
    style = "bold magenta" if across.elsewhere else "dim"
    parts: list[Text | FittedLine] = [Text(across.summary(shown=0), style=style)]
    if across.elsewhere:
        listed = across.elsewhere[:ELSEWHERE_ROWS]
        meter, below = Fixed.of(e.meter for e in listed), Fixed.of(e.below for e in listed)
        rows = [((e.user, count(e.replica), meter(e.meter), below(e.below), count(e.queued)), "") for e in listed]
        if len(across.elsewhere) > ELSEWHERE_ROWS:
            rows.append(((f"… {count(len(across.elsewhere) - ELSEWHERE_ROWS)} more", "", "", "", ""), "dim"))
        parts += fitted_grid(("  would go first", "replica", "meter", "below", "queued"), rows, (False, True, True, True, True),
                             (None, None, 2, None, 1))
    return parts


def _visit(user: str, v: DrrVisit) -> Text:
    """The winner's deficit through the dispatch, each number labelled."""
    quantum = "+ 0 (no new quantum)" if not v.visits else f"+ quantum {amount(v.quantum)}"
    if v.visits > 1:
        quantum += f" ({v.visits} visits)"
    if v.emptied:
        left = v.credit - v.charge
        after = f"after 0 (its queue is empty: {user} leaves the list" + (f", the {amount(left)} left is dropped)" if left else ")")
    else:
        after = f"after {amount(v.after)}"
    return Text.assemble((f"deficit of {user}: ", "bold"), f"before {amount(v.before)} · {quantum} · = credit {amount(v.credit)}"
                         f" · − charge {amount(v.charge)} · = {after}")


def _other(frame: Frame, timeline: Timeline, kind: str) -> Text:
    table, k = frame.table, frame.k
    user = table.user_name(k)
    request = table.request_id(k)
    if kind == "idle_reset":
        return Text(f"Nobody is waiting: the busy period ends and v ← max(v, max S_i) = {amount(table.v[k])} (§2.5). "
                    "The next contention starts everyone from this v.", style="yellow")
    if kind == "arrive":
        before = timeline.state_at(k - 1)
        code = table.user[k]
        was_queued = code < len(before.queued) and before.queued[code] > 0
        if frame.has_meters and not was_queued:
            previous = before.value[code] if code < len(before.value) else float("nan")
            rule = table.traits.join_symbols if table.traits is not None else "its join rule"  # has_meters: a known scheduler
            old = "new user" if previous != previous else f"S_i was {amount(previous)}"
            return Text(f"{request} from {user} arrives to an empty queue: joins with {rule} ({old}, v = {amount(before.v)}) "
                        f"→ {amount(table.value[k])} (§2.4)")
        return Text(f"{request} from {user} arrives and queues behind {count(before.queued[code] if code < len(before.queued) else 0)} of its own requests")
    if kind == "complete":
        traits = table.traits
        if traits is not None and traits.charges == "actual":
            output = table.output[table.req[k]] if table.req[k] >= 0 else float("nan")
            return Text(f"{request} from {user} completes: its actual output ({amount(output)} tokens) is charged now, "
                        f"{traits.value_symbol} → {amount(table.value[k])} (§6.2)")
        if traits is None or traits.reading is None:
            return Text(f"{request} from {user} completes and frees its slot" + (f" ({traits.title} keeps no per-user number)" if traits else ""))
        section = "§2.6" if traits.virtual_time else traits.section
        return Text(f"{request} from {user} completes; no {traits.value_name} ({traits.value_symbol}) changes: "
                    f"{traits.name} charges at dispatch only ({section})")
    if kind == "gap":
        return Text(f"Events before seq {count(table.first_seq + k + 1)} were lost: the proxy's ring no longer held them. "
                    "The state was read again from the proxy; shares count from here.", style="bold red")
    return Text(f"{kind} {request or ''} {user or ''}")


def _wait(w: WaitExplanation) -> list[Text | FittedLine]:
    if w.wait is None:
        head = Text(f"{w.request} ({w.user}) arrived at t={seconds(w.arrived_t)} and is still waiting", style="bold")
    else:
        head = Text(f"{w.request} ({w.user}): arrived t={seconds(w.arrived_t)}, dispatched t={seconds(w.dispatched_t)}, waited {seconds(w.wait)} s",
                    style="bold")
    parts: list[Text | FittedLine] = [Text(""), head]
    if not w.ahead:
        parts.append(Text("nothing was dispatched ahead of it", style="dim"))
        return parts
    meters = any(a.first_meter is not None for a in w.ahead)
    header = ("user", "requests", "cost") + (("picked at v",) if meters else ())
    listed = w.ahead[:AHEAD_ROWS]
    cost = Fixed.of(a.cost for a in listed)
    at = Fixed.of([x for a in listed for x in (a.first_meter, a.last_meter)])
    rows = []
    for a in listed:
        span = at(a.first_meter) if a.first_meter == a.last_meter else f"{at(a.first_meter)}..{at(a.last_meter)}"
        rows.append(((a.user, count(a.count), cost(a.cost)) + ((span,) if meters else ()), ""))
    if len(w.ahead) > AHEAD_ROWS:
        rows.append(((f"… {count(len(w.ahead) - AHEAD_ROWS)} more users", "", "") + (("",) if meters else ()), "dim"))
    parts.append(Text(f"{count(w.ahead_total)} dispatches went ahead while it waited:", style="dim"))
    parts += fitted_grid(header, rows, (False, True, True, True)[:len(header)], (None, None, 2, 1)[:len(header)])
    return parts
