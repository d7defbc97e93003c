"""`sfqtui compare`: replay one trace under several schedulers and compare fairness."""

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sfqtui.cli.engine_start import engine_start_lines
from sfqtui.cli.errors import refuses_bad_input
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.progress import progress_bar
from sfqtui.cli.replay_options import NO_CHOICES, ReplayChoices, with_replicated_replay_options
from sfqtui.cli.tables import print_table, report_console
from sfqtui.core.analysis.engine_waits import QUANTILES, EngineWaits, quantile
from sfqtui.core.analysis.fairness import FairnessReport, fairness_of_replay
from sfqtui.core.analysis.prefix_figures import PrefixFigures, ttft_quantile
from sfqtui.core.analysis.replication_cost import ReplicaMeasures, replica_measures
from sfqtui.core.numbers import SECONDS_DECIMALS, WAIT, Fixed, amount, count, counted, percent, ratio, seconds, span
from sfqtui.core.replay.config import REPRICED, slots_said
from sfqtui.core.schedulers.registry import SYNCABLE, check_schedulers
from sfqtui.trace.joined import TRACES_HELP, joined_trace, named
from sfqtui.trace.load import load_trace


def _headline(report: FairnessReport) -> list[str]:
    gap = report.worst_gap
    gap_text = "-" if gap is None else f"{amount(gap.gap)} ({gap.ahead} over {gap.behind}, t {span(gap.start_t, gap.end_t)})"
    lines = [f"{report.scheduler}: Jain {ratio(report.jain, 3)}, worst |W_i - W_j| {gap_text}"]
    gain = report.worst_gain
    if gain is not None:
        within = "within" if gain.gain <= gain.bound else "over"
        lines.append(f"  worst W_i - W_j while j stays backlogged (§3.3): {amount(gain.gain)} ({gain.ahead} over {gain.behind}, "
                     f"t {span(gain.start_t, gain.end_t)}), {within} 2 c_max = {amount(gain.bound)}")
    if report.at_engine_start is not None:  # a replay with start rows (the engine model's, or a recording's): where requests started running
        lines += [f"  {line}" for line in engine_start_lines(report)]
    prefix = report.prefix
    if prefix is not None:  # engines that model their prefix caches (semantics §14)
        lines.append(f"  prefix cache: hit rate {percent(prefix.hit_rate)} of {counted(prefix.prompt_tokens, 'prompt token')}, "
                     f"prefill saved {counted(prefix.cached_tokens, 'token')}; an engine idle while another queued "
                     f"{seconds(prefix.idle_while_queued_s)} s")
    return lines


def _ttft_table(prefix: PrefixFigures) -> Table:
    """Each user's predicted time to first token (engines that model their prefix caches)."""
    table = Table()
    for header in ("user", "requests started", "TTFT p50 s", "TTFT p99 s"):
        table.add_column(header, justify="left" if header == "user" else "right")
    for user, ttft in sorted(prefix.ttft.items()):
        table.add_row(user, count(len(ttft)), WAIT(ttft_quantile(ttft, 0.5)), WAIT(ttft_quantile(ttft, 0.99)))
    return table


def _table(report: FairnessReport, measures: ReplicaMeasures | None = None) -> Table:
    """``measures``: a replicated run's, which add each user's p99 wait under one scheduler."""
    table = Table()
    headers = ["user", "dispatched", "charged", "share congested", "wait p50 s", "wait p99 s"]
    if measures is not None:
        headers.append("one scheduler p99 s")
    for header in headers:
        table.add_column(header, justify="left" if header == "user" else "right")
    users = sorted(report.users.items())
    charged = Fixed.of(f.charged for _, f in users)
    waits = {q: [f.wait_quantile(q) for _, f in users] for q in (0.5, 0.99)}
    reference = [None if measures is None else measures.p99_wait.get(user, (None, None))[1] for user, _ in users]
    for k, (user, f) in enumerate(users):
        cells = [user, count(f.dispatched), charged(f.charged), percent(report.share(user)), WAIT(waits[0.5][k]), WAIT(waits[0.99][k])]
        if measures is not None:
            cells.append(WAIT(reference[k]))
        table.add_row(*cells)
    return table


def _waits_table(waits: EngineWaits) -> Table:
    """Each user's waits on the engine model: to dispatch, in the engine's queue, and to start running."""
    table = Table(title="waits on the engine model: arrival to dispatch, dispatch to start (the engine's queue), arrival to start",
                  title_justify="left")
    parts = (("to_dispatch", "dispatch"), ("in_engine", "engine queue"), ("to_start", "start"))
    table.add_column("user")
    for _, label in parts:
        for q in QUANTILES:
            table.add_column(f"{label} p{round(q * 100)} s", justify="right")
    users = sorted(waits.users.items())
    cells = [[quantile(getattr(w, name), q) for name, _ in parts for q in QUANTILES] for _, w in users]
    for (user, _), row in zip(users, cells):
        table.add_row(user, *(WAIT(x) for x in row))
    return table


def _replicas_table(measures: ReplicaMeasures, scheduler: str, replicas: str) -> Table:
    """§11's measures of a replicated run against one scheduler with the same slots."""
    table = Table(title=f"{scheduler}, {replicas}", title_justify="left")
    for header in ("measure", "replicated", f"one {scheduler}, same slots"):
        table.add_column(header, justify="left" if header == "measure" else "right")
    drift_where = "" if measures.drift_user is None else f" ({measures.drift_user}, t {seconds(measures.drift_t)})"
    in_c_max = Fixed.of([measures.in_c_max(measures.worst_gap), measures.in_c_max(measures.reference_worst_gap),
                         measures.in_c_max(measures.drift)], least=2)
    span = Fixed.of([measures.makespan, measures.reference_makespan], least=SECONDS_DECIMALS)
    table.add_row("worst |W_i - W_j| in c_max", in_c_max(measures.in_c_max(measures.worst_gap)), in_c_max(measures.in_c_max(measures.reference_worst_gap)))
    table.add_row(f"drift in c_max{drift_where}", in_c_max(measures.in_c_max(measures.drift)), in_c_max(0.0))
    table.add_row("stranded capacity", percent(measures.stranded), percent(0.0))
    table.add_row("makespan s", span(measures.makespan), span(measures.reference_makespan))
    table.add_row("makespan ratio", ratio(measures.makespan_ratio, 3), ratio(1.0, 3))
    table.add_row("c_max", amount(measures.c_max), amount(measures.c_max))
    return table


DEFAULT_SCHEDULERS = "sfq,drr,fifo,rr"
SYNC_SCHEDULERS = ",".join(SYNCABLE)


@refuses_bad_input
@with_replicated_replay_options
def compare(
    traces: Annotated[list[Path], typer.Argument(metavar="TRACE", help=TRACES_HELP, show_default=False)],
    schedulers: Annotated[
        str | None,
        typer.Option("--schedulers", help=f"Comma-separated schedulers to compare. Default: {DEFAULT_SCHEDULERS}; "
                     f"under --share sync, which exchanges meters, {SYNC_SCHEDULERS}.", show_default=False),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of tables.")] = False,
    replay: ReplayChoices = NO_CHOICES,  # with_replicated_replay_options puts the options given here
) -> None:
    """Replay TRACE under each scheduler and compare, per user: the share of charged cost
    while congested (two or more users backlogged), the worst |W_i - W_j| between
    continuously backlogged users (article §3.2), Jain's index and wait p50/p99. For sfq
    and sfq-reset also the worst W_i - W_j of any user over one that stays backlogged
    (§3.3) against 2 c_max, as `sfqtui check` finds it in the same log (JSON: worst_gain).

    With --replicas K, each scheduler runs as K replicas and is measured against one
    scheduler with the same slots (semantics §11): worst gap and drift in c_max,
    stranded capacity, makespan ratio and each user's p99 wait under both (the §3.3
    gain is one scheduler's figure: not given for a replicated run).
    """
    if schedulers is None:
        syncing = replay.replicas.replicated and replay.replicas.share.mode == "sync"
        schedulers = SYNC_SCHEDULERS if syncing else DEFAULT_SCHEDULERS
    names = [s.strip() for s in schedulers.split(",") if s.strip()]
    check_schedulers(names)
    replay.policy.check_used_by(names)
    trace = joined_trace(traces)
    loaded = load_trace(trace)
    configs = [replay.config(name, loaded.metadata) for name in names]
    replicated = replay.replicas.replicated
    runs = 2 if replicated else 1  # a replicated run and its reference
    total = runs * len(names) * len(loaded.trace)
    reports: list[FairnessReport] = []
    measures: list[ReplicaMeasures | None] = []
    with progress_bar("comparing", total) as update:
        for k, config in enumerate(configs):
            progress = functools.partial(_progress, update, k * runs * len(loaded.trace), total)
            if replicated:
                report, measured = replica_measures(loaded.trace, config, progress)
            else:
                report, measured = fairness_of_replay(loaded.trace, config, progress, gains=True), None
            reports.append(report)
            measures.append(measured)
    slots = configs[0].slots
    note_one_slot(trace, loaded.suggested_slots, replay.slots_chosen, replay.service)
    if as_json:
        payload = _payload(named(traces), slots, reports, measures, replay)
        payload["repriced"] = bool(replay.repriced(loaded.trace.columns))
        payload["capacity_ignored"] = bool(replay.capacity_ignored(loaded.recorded_limits))
        typer.echo(json.dumps(payload, indent=2))
        return
    console = report_console()
    where = f", {replay.replicas.describe()}" if replicated else ""
    priced = f", {REPRICED}{note}" if (note := replay.repriced(loaded.trace.columns)) else ""
    users = counted(len(loaded.trace.users), 'user')
    slots_were = f"{slots_said(configs[0])}{replay.capacity_ignored(loaded.recorded_limits)}"
    console.print(f"{named(traces)}: {counted(len(loaded.trace), 'request')}, {users}, {slots_were}{where}{priced}")
    if replay.engine is not None:
        console.print(f"engines: {replay.engine.describe()}; the slots bound what is dispatched and not complete", markup=False)
    elif loaded.measured_service:
        console.print("waits: replayed on the measured service times (service_s), not modelled ones", markup=False)
    for report, measured in zip(reports, measures):
        for line in _headline(report):
            console.print(line, markup=False)
        print_table(console, _table(report, measured))
        if report.waits is not None:
            print_table(console, _waits_table(report.waits))
        if report.prefix is not None:
            print_table(console, _ttft_table(report.prefix))
        if measured is not None:
            print_table(console, _replicas_table(measured, report.scheduler, replay.replicas.describe()))


def _payload(trace: str, slots: int, reports: list[FairnessReport], measures: list[ReplicaMeasures | None],
             replay: ReplayChoices) -> dict[str, object]:
    """The JSON: each scheduler's figures, with a `replicas` object when replicated (semantics §11)."""
    schedulers: dict[str, object] = {}
    for report, measured in zip(reports, measures):
        figures = report.as_dict()
        if measured is not None:
            figures["replicas"] = measured.as_dict()
        schedulers[report.scheduler] = figures
    payload: dict[str, object] = {"trace": trace, "slots": slots, "schedulers": schedulers}
    if replay.replicas.replicated:
        payload["replicas"] = replay.replicas.metadata(slots)
    if replay.engine is not None:
        payload["engine"] = replay.engine.metadata()
    return payload


def _progress(update: Callable[[int, int], None], done: int, total: int, arrived: int) -> None:
    """One replay's progress as part of all of them: ``done`` requests were replayed before it."""
    update(done + arrived, total)
