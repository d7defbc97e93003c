"""`sfqtui simulate`: replay a trace and write its event log."""

import time
from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.errors import refuses_bad_input
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.progress import progress_bar
from sfqtui.cli.replay_options import NO_CHOICES, ReplayChoices, with_replicated_replay_options
from sfqtui.core.numbers import amount, counted
from sfqtui.core.replay.config import ReplayConfig, slots_said
from sfqtui.core.schedulers import SCHEDULERS
from sfqtui.core.schedulers.registry import check_schedulers
from sfqtui.paths import check_output
from sfqtui.trace.chunks import open_trace
from sfqtui.trace.joined import TRACES_HELP, joined_trace
from sfqtui.trace.simulate import simulate as run_simulation

SCHEDULER_HELP = f"Scheduling algorithm: {', '.join(SCHEDULERS)}."


@refuses_bad_input
@with_replicated_replay_options
def simulate(
    traces: Annotated[list[Path], typer.Argument(metavar="TRACE", help=TRACES_HELP, show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Event-log Parquet file to write (semantics §7).")],
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help=SCHEDULER_HELP)] = "sfq",
    replay: ReplayChoices = NO_CHOICES,  # with_replicated_replay_options puts the options given here
) -> None:
    """Replay TRACE under one scheduler and write the full event log (several files: one
    trace of all their requests, such as a group's recordings).

    All events at one timestamp apply before dispatch (completions, then arrivals in
    trace order); then requests are dispatched one at a time while a slot is free.
    With --replicas K, K balancer replicas behind --router, sharing --share (semantics
    §11); the log names each event's replica.
    """
    started = time.perf_counter()
    check_schedulers([scheduler])
    replay.policy.check_used_by([scheduler])
    check_output(output, not_one_of=traces)
    trace = joined_trace(traces)
    source = open_trace(trace)
    config = replay.config(scheduler, source.metadata)
    with progress_bar("replaying", len(source)) as update:
        result = run_simulation(source, config, output, progress=update)
    note_one_slot(trace, source.suggested_slots, replay.slots_chosen, replay.service)
    elapsed = time.perf_counter() - started
    cost = "the cost column" if result.cost_source == "column" else result.cost_source
    cost += replay.repriced(result.requests.columns)
    quantum = f", quantum {amount(result.quantum)}" if result.quantum is not None else ""
    ignored = replay.capacity_ignored(source.recorded_limits)
    typer.echo(
        f"wrote {output}: {counted(result.log.start, 'event')}, {counted(result.dispatched, 'dispatch', 'dispatches')} "
        f"({config.scheduler}, {slots_said(config)}{ignored}{_replicas(config)}{quantum}, cost: {cost}{_engines(config)}) in {elapsed:.2f} s"
    )


def _engines(config: ReplayConfig) -> str:
    """'; on 1 engine of 6 places, ...' for a replay on the engine model, else nothing."""
    return "" if config.engine is None else f"; on {config.engine.describe()}"


def _replicas(config: ReplayConfig) -> str:
    """', 4 replicas, hash, share none, slots 4/4/4/4' for a replicated replay, else nothing."""
    replicas = config.replicas
    if not replicas.replicated:
        return ""
    split = f", slots {'/'.join(map(str, replicas.slots(config.slots)))}" if replicas.share.splits_slots else ""
    return f", {replicas.describe()}{split}"
