"""`sfqtui explain`: why one request waited as long as it did, for scripts and support tickets."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.cli.fixed_log import refuse_trace_options
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.openings import check_openings
from sfqtui.cli.replay_options import NO_CHOICES, ReplayChoices, with_replicated_replay_options
from sfqtui.cli.tables import print_table, report_console
from sfqtui.core.analysis.across_replicas import across_replicas
from sfqtui.core.analysis.explain import explain_dispatch, explain_wait
from sfqtui.core.analysis.narrate import narrate
from sfqtui.core.log.shadow import Shadow, ShadowMismatch
from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import TIME, WAIT, Fixed, amount, count, counted, seconds
from sfqtui.core.replay.config import NOT_RECORDED_CAPACITY, REPRICED
from sfqtui.core.replay.recorded import capacity_said
from sfqtui.core.replay.run_spec import RunSpec, parse_run_specs
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.core.schedulers.registry import check_schedulers
from sfqtui.runs.opening import Opening, is_event_log, one_path
from sfqtui.runs.run import Run
from sfqtui.trace.joined import named
from sfqtui.trace.write import read_metadata


def _request_code(table: EventTable, request_id: str, path: str) -> int:
    code = table.names.find(request_id) if table.names is not None else None
    if code is None or not table.life_of(code):
        example = f", such as {table.request_id(0)}" if len(table) else ""
        raise fail(f"no request {request_id!r} in {path} (its request ids are the trace's request_id column{example})")
    if "arrive" not in table.life_of(code):  # a recording that starts from a snapshot (docs/semantics.md §7)
        raise fail(f"{request_id} arrived before {path} starts (a recording that joined late starts from the proxy's "
                   "state at the join): its wait is not in the log; explain a request that arrived later")
    return code


def _sent(table: EventTable, code: int) -> dict[str, Any]:
    """When the request arrived, was dispatched (and at which position) and finished."""
    life = table.life_of(code)
    arrived = table.t[life["arrive"]]
    k = life.get("dispatch")
    finished = life.get("complete")
    return {
        "arrived": arrived,
        "dispatched": None if k is None else table.t[k],
        "position": None if k is None else table.dispatch_number(k) + 1,
        "completed": None if finished is None else table.t[finished],
        "cancelled": None if "cancel" not in life else table.t[life["cancel"]],
        "waited": None if k is None else table.t[k] - arrived,
    }


def _why(run: Run, code: int) -> dict[str, Any]:
    """The explanation of one request in one run, as the JSON object has it."""
    table, timeline, replicas = run.table, run.timeline, run.replicas
    wait = explain_wait(table, code, split=replicas is not None and replicas.split)
    assert wait is not None
    found: dict[str, Any] = {"request_id": wait.request, "user": wait.user, "scheduler": table.scheduler, "slots": run.slots,
                             "repriced": bool(run.metadata.get("repriced")), "capacity_ignored": bool(run.metadata.get("capacity_ignored")),
                             **_sent(table, code)}
    if isinstance(run.metadata.get("capacity"), dict):  # the slots followed a recording's limits
        found["capacity"] = run.metadata["capacity"]
    if replicas is not None:
        found["replica"] = wait.replica
        found["replicas"] = run.metadata.get("replicas")
    found["ahead"] = [{"user": a.user, "requests": a.count, "cost": a.cost} for a in wait.ahead]
    k = table.dispatch_at[code]
    dispatch = explain_dispatch(table, timeline, k, replicas=replicas) if k >= 0 else None
    if dispatch is None:
        found.update(cost=None, candidates=[], narration=None,
                     reason="it was cancelled before dispatch" if found["cancelled"] is not None else "it was still waiting when the log ends")
        return found
    found["cost"] = dispatch.cost
    if table.cached is not None:  # engines that model their prefix caches, or upstreams that said them (semantics §14)
        found["cached_tokens"] = table.cached.get(code)
    found["candidates"] = [
        {"user": c.user, "value": c.value, "queued": c.queued, "weight": c.weight, "head_request": c.head_request, "head_cost": c.head_cost}
        for c in dispatch.candidates
    ]
    found["reason"] = dispatch.reason
    if replicas is not None:
        across = across_replicas(timeline, replicas, k)
        assert across is not None
        found["across_replicas"] = {
            "replica": across.replica, "share": across.share, "meter": across.meter, "summary": across.summary(),
            "elsewhere": [{"user": e.user, "replica": e.replica, "meter": e.meter, "below": e.below, "queued": e.queued}
                          for e in across.elsewhere],
        }
    try:
        found["narration"] = narrate(table, timeline, k, Shadow.of_run(table, run.metadata), replicas)
    except ShadowMismatch:  # e.g. DRR on estimated costs: a head priced before its dispatch may have cost otherwise
        found["narration"] = narrate(table, timeline, k, replicas=replicas)
    return found


def _compared(opening: Opening, specs: list[RunSpec], request_id: str) -> dict[str, dict[str, Any]]:
    compared = {}
    for spec in specs:
        config = spec.config(opening.config)
        run = Run(opening.rerun(**spec.changes(opening.config))).load_all()
        code = run.table.names.find(request_id) if run.table.names is not None else None
        assert code is not None
        sent = _sent(run.table, code)
        compared[str(spec)] = {"run": str(RunSpec.written_out(config.scheduler, config.replicas)), "dispatched": sent["dispatched"],
                               "position": sent["position"], "waited": sent["waited"]}
        if run.table.replicated:
            compared[str(spec)]["replica"] = run.table.replica_of(run.table.arrive_at[code])
    return compared


def _slots_said(found: dict[str, Any]) -> str:
    return capacity_said(found["capacity"]) if "capacity" in found else counted(found["slots"], "slot")


def _print(found: dict[str, Any], path: str, value_name: str | None) -> None:
    """``value_name``: the scheduler's own per-user number (None: it has none)."""
    console = report_console()
    slots = found["slots"]
    replicas = found.get("replicas")
    where = "" if not replicas else f", {ReplicaSettings.from_metadata(replicas).describe()}, held on replica {found['replica']}"
    priced = f", {REPRICED}: the trace's costs ignored" if found["repriced"] else ""
    priced += f", {NOT_RECORDED_CAPACITY}" if found["capacity_ignored"] else ""
    console.print(f"[bold]{found['request_id']}[/] of [bold]{found['user']}[/] under {found['scheduler']}"
                  f"{'' if slots is None else ', ' + _slots_said(found)}{where}{priced} ({path})")
    console.print(f"  arrived     t {seconds(found['arrived'])}")
    if found["dispatched"] is None:
        console.print(f"  not dispatched: {found['reason']}")
    else:
        console.print(f"  dispatched  t {seconds(found['dispatched'])}, dispatch #{count(found['position'])}, cost {amount(found['cost'])}")
    if found.get("cached_tokens") is not None:
        console.print(f"  cached      {counted(found['cached_tokens'], 'prompt token')} found in its engine's prefix cache")
    if found["completed"] is not None:
        console.print(f"  completed   t {seconds(found['completed'])}")
    if found["waited"] is not None:
        console.print(f"  waited      {seconds(found['waited'])} s")
    went = sum(a["requests"] for a in found["ahead"])
    on = f" on replica {found['replica']}" if replicas and replicas.get("share_mode") != "global" else ""
    console.print(f"Went ahead of it{on}: {counted(went, 'dispatch', 'dispatches')} after it arrived, before its own")
    ahead = Table()
    for header in ("user", "requests", "cost"):
        ahead.add_column(header, justify="left" if header == "user" else "right")
    cost = Fixed.of(a["cost"] for a in found["ahead"])
    for a in found["ahead"]:
        ahead.add_row(a["user"], count(a["requests"]), cost(a["cost"]))
    print_table(console, ahead)
    if found["candidates"]:
        console.print(f"At its dispatch: {counted(len(found['candidates']), 'user')} waiting")
        candidates = Table()
        headers = ("user", *([value_name] if value_name else []), "queued", "weight", "head request", "head cost")
        for header in headers:
            candidates.add_column(header, justify="left" if header in ("user", "head request") else "right")
        listed = found["candidates"]
        value, weight, head_cost = (Fixed.of(c[key] for c in listed) for key in ("value", "weight", "head_cost"))
        for c in listed:
            style = "bold" if c["user"] == found["user"] else ""
            candidates.add_row(c["user"], *([value(c["value"])] if value_name else []), count(c["queued"]), weight(c["weight"]),
                               c["head_request"] or "-", head_cost(c["head_cost"]), style=style)
        print_table(console, candidates)
        console.print(f"[green]why:[/] {found['reason']}")
        console.print(f"[green]what happened:[/] {found['narration']}")
    if "across_replicas" in found:
        _print_across(console, found["across_replicas"])
    if "compare" in found:
        console.print("The same request under each scheduler")
        compare = Table()
        for header in ("scheduler", "dispatched t", "dispatch #", "waited s"):
            compare.add_column(header, justify="left" if header == "scheduler" else "right")
        names = [found["scheduler"]]
        if replicas:  # this run's settings as a run spec, as the others are named
            settings = ReplicaSettings.from_metadata(replicas)
            names[0] = f"{RunSpec.written_out(names[0], settings)} (replica {found['replica']})"
        for sent in found["compare"].values():
            names.append(sent["run"] + (f" (replica {sent['replica']})" if sent.get("replica") is not None else ""))
        sends = [found, *found["compare"].values()]
        for name, sent in zip(names, sends):
            compare.add_row(name, TIME(sent["dispatched"]), count(sent["position"]), WAIT(sent["waited"]), style="bold" if sent is found else "")
        print_table(console, compare)


def _print_across(console: Console, across: dict[str, Any]) -> None:
    """Who was waiting on the other replicas with a smaller meter at its dispatch."""
    console.print(f"[green]across replicas:[/] {across['summary']}")
    if not across["elsewhere"]:
        return
    elsewhere = Table()
    for header in ("user", "replica", "meter", "below the pick", "queued"):
        elsewhere.add_column(header, justify="left" if header == "user" else "right")
    listed = across["elsewhere"]
    meter, below = (Fixed.of(e[key] for e in listed) for key in ("meter", "below"))
    for e in listed:
        elsewhere.add_row(e["user"], count(e["replica"]), meter(e["meter"]), below(e["below"]), count(e["queued"]))
    print_table(console, elsewhere)


# explain's own options; every other one says how to replay a trace (--scheduler is checked against the log's).
_OWN_OPTIONS = ("paths", "request_id", "scheduler", "compare", "as_json")


@refuses_bad_input
@with_replicated_replay_options
def explain(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(metavar="TRACE_OR_LOG", show_default=False,
                                                help="A trace (replayed with the core) or a saved event log; several traces "
                                                     "are read as one (a group's recordings, one a replica).")],
    request_id: Annotated[str, typer.Argument(metavar="REQUEST_ID", help="The request's id (the trace's request_id).", show_default=False)],
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", "-s", help="Scheduler to replay a trace under (default sfq); a log is explained under its own.", show_default=False),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            help="Comma-separated run specs to replay the trace under too: when, and as which dispatch, each sends the request. "
            "A spec is a scheduler, with replica settings after @ if they differ: drr,sfq@replicas=2,router=hash,share=none (docs/guide.md).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object for machines instead of tables.")] = False,
    replay: ReplayChoices = NO_CHOICES,  # with_replicated_replay_options puts the options given here
) -> None:
    """Explain one request: when it arrived, was dispatched and completed, how long it
    waited; whose dispatches went ahead of it meanwhile (per user: count and cost); at its
    dispatch, the users waiting and why it was picked; with --compare, when the other
    schedulers (or replica settings) would have sent it.

    On a run of several replicas (--replicas, or a replicated log): the replica that held
    it, only that replica's dispatches as having gone ahead (unless --share global), its
    candidates, and the users then waiting on other replicas with smaller meters: who
    would have gone first under one SFQ, and by how much.
    """
    if scheduler is not None:
        check_schedulers([scheduler])
    specs = parse_run_specs(compare) if compare is not None else []
    path = one_path(paths)
    is_log = is_event_log(path)
    if is_log and specs:
        raise fail(f"--compare replays a trace under other schedulers, and {path} is an event log: give the trace it was made from")
    if is_log:
        refuse_trace_options(ctx, path, _OWN_OPTIONS)
    metadata = {} if is_log else read_metadata(path)  # settings checked against the slots (--replicas) see the trace's suggestion
    opening = Opening(path=path, is_log=is_log, config=replay.config(scheduler or "sfq", metadata),
                      slots_given=replay.slots_chosen is not None)
    for trace, source in check_openings([opening]).items():
        note_one_slot(trace, source.suggested_slots, replay.slots_chosen, replay.service)
    run = Run(opening).load_all()
    if is_log and scheduler is not None and scheduler != run.scheduler:
        raise fail(f"{path} is a log of {run.scheduler}; it cannot be explained under {scheduler}")
    found = _why(run, _request_code(run.table, request_id, named(paths)))
    if specs:
        found["compare"] = _compared(opening, specs, request_id)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
    else:
        traits = run.table.traits
        _print(found, named(paths), traits.value_name if traits is not None and traits.reading is not None else None)
