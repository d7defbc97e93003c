"""`sfqtui compare`: replay one trace under several schedulers and compare fairness."""

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sfqtui.cli.errors import refuses_bad_input
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.progress import progress_bar
from sfqtui.cli.replay_options import NO_CHOICES, ReplayChoices, with_replay_options
from sfqtui.core.analysis.fairness import FairnessReport, fairness_of_replay
from sfqtui.core.numbers import SECONDS_DECIMALS, Fixed, amount, count, percent, ratio, seconds
from sfqtui.core.schedulers.registry import check_schedulers
from sfqtui.trace.load import load_trace


def _headline(report: FairnessReport) -> list[str]:
    gap = report.worst_gap
    gap_text = "-" if gap is None else f"{amount(gap.gap)} ({gap.ahead} over {gap.behind}, t {seconds(gap.start_t)}..{seconds(gap.end_t)})"
    lines = [f"{report.scheduler}: Jain {ratio(report.jain, 3)}, worst |W_i - W_j| {gap_text}"]
    gain = report.worst_gain
    if gain is not None:
        within = "within" if gain.gain <= gain.bound else "over"
        lines.append(f"  worst W_i - W_j while j stays backlogged (§3.3): {amount(gain.gain)} ({gain.ahead} over {gain.behind}, "
                     f"t {seconds(gain.start_t)}..{seconds(gain.end_t)}), {within} 2 c_max = {amount(gain.bound)}")
    return lines


def _table(report: FairnessReport) -> Table:
    table = Table()
    for header in ("user", "dispatched", "charged", "share congested", "wait p50 s", "wait p99 s"):
        table.add_column(header, justify="left" if header == "user" else "right")
    users = sorted(report.users.items())
    charged = Fixed.of(f.charged for _, f in users)
    waits = {q: [f.wait_quantile(q) for _, f in users] for q in (0.5, 0.99)}
    wait = Fixed.of([*waits[0.5], *waits[0.99]], least=SECONDS_DECIMALS)
    for k, (user, f) in enumerate(users):
        table.add_row(user, count(f.dispatched), charged(f.charged), percent(report.share(user)), wait(waits[0.5][k]), wait(waits[0.99][k]))
    return table


@refuses_bad_input
@with_replay_options
def compare(
    trace: Annotated[Path, typer.Argument(help="Trace Parquet file (semantics §1).", show_default=False)],
    schedulers: Annotated[str, typer.Option("--schedulers", help="Comma-separated schedulers to compare.")] = "sfq,drr,fifo,rr",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of tables.")] = False,
    replay: ReplayChoices = NO_CHOICES,  # with_replay_options puts the options given here
) -> None:
    """Replay TRACE under each scheduler and compare, per user: the share of charged cost
    while congested (two or more users backlogged), the worst |W_i - W_j| between
    continuously backlogged users (article §3.2), Jain's index and wait p50/p99. For sfq
    and sfq-reset also the worst W_i - W_j of any user over one that stays backlogged
    (§3.3) against 2 c_max, as `sfqtui check` finds it in the same log (JSON: worst_gain).
    """
    names = [s.strip() for s in schedulers.split(",") if s.strip()]
    check_schedulers(names)
    loaded = load_trace(trace)
    reports = []
    config = None
    total = len(names) * len(loaded.trace)
    with progress_bar("comparing", total) as update:
        for k, name in enumerate(names):
            config = replay.config(name, loaded.suggested_slots)
            reports.append(fairness_of_replay(loaded.trace, config, functools.partial(_progress, update, k * len(loaded.trace), total),
                                              gains=True))
    assert config is not None
    note_one_slot(trace, loaded.suggested_slots, replay.slots, replay.service)
    if as_json:
        payload = {"trace": str(trace), "slots": config.slots, "schedulers": {r.scheduler: r.as_dict() for r in reports}}
        typer.echo(json.dumps(payload, indent=2))
        return
    console = Console()
    console.print(f"{trace}: {len(loaded.trace):,} requests, {len(loaded.trace.users):,} users, {count(config.slots)} slots")
    for report in reports:
        for line in _headline(report):
            console.print(line, markup=False)
        console.print(_table(report))


def _progress(update: Callable[[int, int], None], done: int, total: int, arrived: int) -> None:
    """One replay's progress as part of all of them: ``done`` requests were replayed before it."""
    update(done + arrived, total)
