"""Why: the candidates of the current dispatch and why the winner won; and the wait of its request."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from sfqtui.core.explain import DispatchExplanation, WaitExplanation, explain_dispatch, explain_wait
from sfqtui.core.timeline import Timeline
from sfqtui.ui.frame import Frame, fmt

AHEAD_ROWS = 6


class ExplainPanel(VerticalScroll):
    DEFAULT_CSS = "ExplainPanel { height: 1fr; } ExplainPanel > Static { width: 1fr; }"

    def compose(self):  # noqa: ANN201
        yield Static(id="explain-body")

    def show(self, frame: Frame, timeline: Timeline) -> None:
        table, k = frame.table, frame.k
        parts: list[object] = []
        if k < 0:
            parts.append(Text("Before the first event. → steps forward, space plays, ? shows every key."))
        else:
            kind = table.kind_name(k)
            if kind == "dispatch":
                explanation = explain_dispatch(table, timeline, k)
                assert explanation is not None
                parts += _dispatch(explanation, frame)
            else:
                parts.append(_other(frame, timeline, kind))
            request = table.request_id[k]
            if request is not None:
                wait = explain_wait(table, request)
                if wait is not None:
                    parts += _wait(wait)
        self.query_one("#explain-body", Static).update(Group(*parts))


def _dispatch(e: DispatchExplanation, frame: Frame) -> list[object]:
    title = Text.assemble(("Dispatch ", "bold"), (e.user, "bold reverse"), f"  {e.request}  cost {fmt(e.cost)}")
    grid = Table(box=None, pad_edge=False, header_style="bold")
    meters = frame.has_meters
    grid.add_column("")
    grid.add_column("user")
    grid.add_column("S_i" if meters else ("deficit" if e.scheduler == "drr" else "queued"), justify="right")
    grid.add_column("head cost", justify="right")
    grid.add_column("w", justify="right")
    grid.add_column("queued", justify="right")
    for c in e.candidates:
        value = c.meter if meters else (c.deficit if e.scheduler == "drr" else float(c.queued))
        mark, style = ("▶", "bold") if c.user == e.user else ("", "")
        grid.add_row(mark, c.user, fmt(value), fmt(c.head_cost), fmt(c.weight), str(c.queued), style=style)
    parts: list[object] = [title, Text(f"{len(e.candidates)} waiting:", style="dim"), grid, Text("why: " + e.reason, style="green")]
    if meters and e.v is not None and e.meter_after is not None:
        position = e.band_position
        where = "" if position is None else f", {position:.0%} of the way up the band [v, v + c_max]"
        parts.append(Text(f"charge: v ← S_{e.user} = {fmt(e.v)}; S_{e.user} ← {fmt(e.v)} + {fmt(e.cost)}/w = {fmt(e.meter_after)}{where}"))
    return parts


def _other(frame: Frame, timeline: Timeline, kind: str) -> Text:
    table, k = frame.table, frame.k
    user = table.user_name(k)
    request = table.request_id[k]
    if kind == "idle_reset":
        return Text(f"Nobody is waiting: the busy period ends and v ← max(v, max S_i) = {fmt(table.v[k])} (§2.5). "
                    "The next contention starts everyone from this v.", style="yellow")
    if kind == "arrive":
        before = timeline.state_at(k - 1)
        code = table.user[k]
        was_queued = code < len(before.queued) and before.queued[code] > 0
        if frame.has_meters and not was_queued:
            previous = before.meter[code] if code < len(before.meter) else float("nan")
            rule = "S_i ← v" if table.scheduler == "sfq-reset" else "S_i ← max(S_i, v)"
            old = "new user" if previous != previous else f"S_i was {fmt(previous)}"
            return Text(f"{request} from {user} arrives to an empty queue: joins with {rule} ({old}, v = {fmt(before.v)}) "
                        f"→ {fmt(table.meter[k])} (§2.4)")
        return Text(f"{request} from {user} arrives and queues behind {before.queued[code] if code < len(before.queued) else 0} of its own requests")
    if kind == "complete":
        return Text(f"{request} from {user} completes; meters do not change on completion (§2.6)")
    return Text(f"{kind} {request or ''} {user or ''}")


def _wait(w: WaitExplanation) -> list[object]:
    if w.wait is None:
        head = Text(f"{w.request} ({w.user}) arrived at t={fmt(w.arrived_t)} and is still waiting", style="bold")
    else:
        head = Text(f"{w.request} ({w.user}): arrived t={fmt(w.arrived_t)}, dispatched t={fmt(w.dispatched_t)}, waited {fmt(w.wait)} s", style="bold")
    parts: list[object] = [Text(""), head]
    if not w.ahead:
        parts.append(Text("nothing was dispatched ahead of it", style="dim"))
        return parts
    grid = Table(box=None, pad_edge=False, header_style="bold", title=f"{w.ahead_total} dispatches went ahead while it waited", title_justify="left")
    meters = any(a.first_meter is not None for a in w.ahead)
    for name, justify in (("user", "left"), ("requests", "right"), ("cost", "right")) + ((("picked at v", "right"),) if meters else ()):
        grid.add_column(name, justify=justify)
    for a in w.ahead[:AHEAD_ROWS]:
        span = fmt(a.first_meter) if a.first_meter == a.last_meter else f"{fmt(a.first_meter)}..{fmt(a.last_meter)}"
        grid.add_row(a.user, str(a.count), fmt(a.cost), *((span,) if meters else ()))
    if len(w.ahead) > AHEAD_ROWS:
        grid.add_row(f"… {len(w.ahead) - AHEAD_ROWS} more users", "", "", *(("",) if meters else ()))
    parts.append(grid)
    return parts
