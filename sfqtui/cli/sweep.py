"""`sfqtui sweep`: replay every combination of traces and settings on Dask distributed."""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, cast

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from sfqtui.cli.errors import fail, refuses_bad_input, stops_on_ctrl_c
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.progress import progress_bar
from sfqtui.cli.tables import print_table, report_console
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.numbers import count, counted, percent, ratio
from sfqtui.paths import check_output
from sfqtui.sweep.measures import fairness_figures
from sfqtui.sweep.plan import ReplicaGrid, check_settings, plan_runs
from sfqtui.sweep.results import complete_rows, write_results
from sfqtui.sweep.runs import Row
from sfqtui.trace.load import load_trace


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _counts(text: str, option: str) -> list[int]:
    try:
        return [int(part) for part in _names(text)]
    except ValueError:
        raise fail(f"{option} takes whole numbers separated by commas, not {text!r}") from None


def _shares(text: str) -> list[str]:
    """Share modes separated by commas; a number right after sync:T is its delay (sync:T,D)."""
    shares: list[str] = []
    for part in _names(text):
        if shares and shares[-1].startswith("sync:") and "," not in shares[-1] and _is_number(part):
            shares[-1] += f",{part}"
        else:
            shares.append(part)
    return shares


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@stops_on_ctrl_c
@refuses_bad_input
def sweep(
    traces: Annotated[list[Path], typer.Argument(help="Trace Parquet files (semantics §1).", show_default=False)],
    schedulers: Annotated[str, typer.Option("--schedulers", help="Comma-separated schedulers.")] = "sfq,drr,fifo,rr",
    slots: Annotated[
        str | None,
        typer.Option("--slots", "-n", help="Comma-separated slot counts. Default: each trace's own suggestion, else 1.", show_default=False),
    ] = None,
    ratio_scope: Annotated[str, typer.Option("--ratio-scope", help="Comma-separated ratio scopes: global, model, user (docs/estimator.md).")] = "global",
    ratio_update: Annotated[str, typer.Option("--ratio-update", help="Comma-separated ratio update rules: window, ema, cumulative.")] = "window",
    replicas: Annotated[str, typer.Option("--replicas", "-k", help="Comma-separated replica counts K (semantics §11); 1: one balancer.")] = "1",
    router: Annotated[str, typer.Option("--router", help="Comma-separated routers: hash, random, round-robin, least-loaded.")] = "hash",
    share: Annotated[
        str, typer.Option("--share", help="Comma-separated share modes: none, global, sync:T or sync:T,D (a number after sync:T is its delay).")
    ] = "none",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random router.")] = 0,
    engines: Annotated[
        int | None,
        typer.Option("--engines", help="Run each replay on this many engines of sfqtui engine's default model, as compare --engines "
                     "(docs/engine.md); the rows then add the prefix cache's figures on a trace with prefix_blocks.", show_default=False),
    ] = None,
    placement: Annotated[
        str, typer.Option("--placement", help="Comma-separated placements among the engines: room, prefix, affinity (docs/semantics.md §14).")
    ] = "room",
    workers: Annotated[
        int | None,
        typer.Option("--workers", "-w", help="Worker processes of the local Dask cluster started for this sweep. Default: one per CPU.", show_default=False),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="Submit the runs to the running Dask scheduler at this address (tcp://HOST:8786) instead of a local cluster; docs/sweep.md.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Parquet file to write, one row per run.", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"runs": [...]} for machines instead of a table.')] = False,
) -> None:
    """Replay many settings at once on Dask distributed: one row of fairness figures per run.

    Every combination of TRACES x schedulers x slots x ratio scopes x ratio updates x
    replicas x routers x shares is an independent replay (one replica is one run, whatever
    the router and share). Each row holds its settings, Jain's index, the worst
    |W_i - W_j|, and per-user shares and wait p50/p99: the figures `compare` prints for
    the same settings (the other estimator and service options are at their defaults);
    and the measures of semantics §11 against one scheduler with the same slots: worst
    gap and drift in c_max, stranded capacity and makespan ratio.

    By default the runs go to a local cluster of worker processes started and stopped
    here; --cluster sends them to a Dask scheduler with workers on other machines
    (docs/sweep.md). Bad settings are refused before any run starts; a run that fails
    is reported in its row (error column) and the others complete.
    """
    scheduler_names, scopes, updates = _names(schedulers), _names(ratio_scope), _names(ratio_update)
    slot_counts = None if slots is None else _counts(slots, "--slots")
    grid = ReplicaGrid(_counts(replicas, "--replicas"), _names(router), _shares(share), seed)
    check_settings(scheduler_names, slot_counts, scopes, updates, grid)
    if workers is not None and cluster is not None:
        raise fail("--workers and --cluster exclude each other: a running cluster already has its workers")
    if workers is not None and workers < 1:
        raise fail("--workers must be >= 1")
    if output is not None:
        check_output(output, not_one_of=traces)
    loaded = {str(path): load_trace(path) for path in traces}
    for path, trace in loaded.items() if slot_counts is None else ():
        note_one_slot(Path(path), trace.suggested_slots, None)
    engine = None if engines is None else EngineSettings(EngineModel(), engines)
    runs = plan_runs({name: trace.suggested_slots for name, trace in loaded.items()}, scheduler_names, slot_counts, scopes, updates, grid,
                     engine, _names(placement))
    cores = {name: trace.trace for name, trace in loaded.items()}
    from sfqtui.sweep.cluster import dask_client, run_on_dask  # see its docstring: imported only when needed

    with dask_client(workers=workers or os.cpu_count() or 1, address=cluster) as client, \
            progress_bar("sweeping", len(runs)) as update:
        rows = complete_rows(run_on_dask(client, runs, cores, fairness_figures, update))
    if output is not None:
        write_results(rows, output)
    failed = sum(1 for row in rows if row["error"])
    if failed:
        print(f"sfqtui: {count(failed)} of {counted(len(rows), 'run')} failed (see {'its' if failed == 1 else 'their'} error)", file=sys.stderr)
    if as_json:
        typer.echo(json.dumps({"runs": rows}, indent=2))
        return
    console = report_console()
    print_table(console, _table(rows))
    for line in _failures(rows):
        console.print(line)
    if output is not None:
        console.print(f"wrote {output}: {counted(len(rows), 'run')}")


SETTINGS = {"trace": "trace", "scheduler": "scheduler", "slots": "slots", "ratio_scope": "scope", "ratio_update": "update",
            "replicas": "K", "router": "router", "share": "share", "placement": "placement"}


def _table(rows: list[Row]) -> Table:
    """Settings that vary between runs get a column; the others are named once in the title."""
    varying = [key for key in SETTINGS if len({str(row[key]) for row in rows}) > 1]
    fixed = [f"{SETTINGS[key]} {_setting(rows[0], key)}" for key in SETTINGS if key not in varying]
    table = Table(title="; ".join([f"sweep: {counted(len(rows), 'run')}", *fixed]), title_justify="left", box=box.SIMPLE_HEAD)
    replicated = any(row["replicas"] != 1 for row in rows)
    cached = any(row["prefix_hit_rate"] is not None for row in rows)
    for key in varying:
        table.add_column(SETTINGS[key], justify="right" if key in ("slots", "replicas") else "left")
    for header in ("Jain", "worst gap", "who", *(("gap c_max", "drift c_max", "stranded") if replicated else ()),
                   *(("hit rate", "gap at start") if cached else ()), "run s"):
        table.add_column(header, justify="left" if header == "who" else "right")
    for number, row in enumerate(rows, 1):
        figures: list[str | Text]
        if row["error"]:
            figures = [Text("failed", style="red"), "-", f"run {number}, below"]
        elif row["worst_gap"] is None:
            figures = [_fixed(row["jain"], 3), "-", "-"]
        else:
            figures = [_fixed(row["jain"], 3), f"{row['worst_gap']:,.0f}", f"{row['worst_gap_ahead']} over {row['worst_gap_behind']}"]
        if replicated:
            figures += _replica_figures(row)
        if cached:
            start = _number(row["worst_gap_at_start"])
            figures += [percent(_number(row["prefix_hit_rate"])), "-" if start is None else f"{start:,.0f}"]
        table.add_row(*(_setting(row, key) for key in varying), *figures, _fixed(row["seconds"], 1))
    return table


def _replica_figures(row: Row) -> list[str | Text]:
    """Worst gap and drift in c_max, stranded capacity in % (semantics §11)."""
    if row["error"]:
        return ["-", "-", "-"]
    gap, drift, stranded = (_number(row[key]) for key in ("worst_gap_cmax", "drift_cmax", "stranded"))
    return [ratio(gap, 1), ratio(drift, 1), percent(stranded)]


def _number(x: object) -> float | None:
    assert x is None or isinstance(x, float)  # the figure columns hold floats
    return x


def _setting(row: Row, key: str) -> str:
    if row[key] is None:
        return "-"
    return Path(str(row[key])).name if key == "trace" else str(row[key])


def _failures(rows: list[Row]) -> list[Text]:
    return [Text(f"run {number} ({row['trace']}, {row['scheduler']}, {counted(cast(int, row['slots']), 'slot')}) failed: {row['error']}", style="red")
            for number, row in enumerate(rows, 1) if row["error"]]


def _fixed(x: object, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"
