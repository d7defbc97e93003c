"""`sfqtui check`: verify an event log against the article's invariants."""

import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated

import pyarrow.parquet as pq
import typer

from sfqtui.cli.engine_start import engine_start_lines
from sfqtui.cli.errors import refuses_bad_input
from sfqtui.core.analysis.audit import AuditReport, PolicyLog, Replicas, Snapshot, audit
from sfqtui.core.analysis.audit.report import Suspension
from sfqtui.core.analysis.fairness import FairnessTally
from sfqtui.core.log.rows import LogRows
from sfqtui.core.numbers import amount, count, counted
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.errors import InputError
from sfqtui.trace.eventlog import has_kind, iter_log_rows, output_weight_of, read_log_schema
from sfqtui.trace.load import read_parquet_header
from sfqtui.trace.schema import LOG_COLUMNS, REQUIRED
from sfqtui.trace.write import read_metadata


def render(report: AuditReport, path: Path, replicas: ReplicaSettings | None = None, engine: list[str] | None = None) -> str:
    """``engine``: what is said of fairness at engine start (cli/engine_start.py), before the verdict."""
    made = f" ({replicas.describe()})" if replicas is not None and replicas.replicated else ""
    lines = [
        f"{path}: {report.scheduler} log{made}, {counted(report.events, 'event')}, {counted(report.dispatches, 'dispatch', 'dispatches')}, "
        f"{counted(report.users, 'user')}" + (f", c_max {amount(report.c_max)}" if report.c_max else "")
    ]
    if report.snapshot_seq is not None:
        lines.append(f"  audited from seq {count(report.snapshot_seq)} (a snapshot of the proxy's state at the join)")
    lines += [f"  {suspended(s)}" for s in report.suspensions]
    for rules, text in report.checks:
        mark = "FAIL" if report.failed(rules) else "ok"
        lines.append(f"  [{mark:>4}] {text}")
    if report.upper_margin.seq >= 0:
        m = report.upper_margin
        lines.append(f"  closest to v + c_max: seq {count(m.seq)}: {m.detail} (slack {amount(m.slack)})")
    if report.lower_margin.seq >= 0:
        m = report.lower_margin
        lines.append(f"  closest to v from above: seq {count(m.seq)}: {m.detail} (slack {amount(m.slack)})")
    if report.worst_gap is not None:
        g = report.worst_gap
        where = "" if g.replica is None else f" on replica {g.replica}"
        lines.append(
            f"  worst W_i - W_j found{where}: {g.user} gained {amount(g.gap)} over backlogged {g.behind} "
            f"from seq {count(g.start_seq)} to seq {count(g.end_seq)} (bound 2 c_max = {amount(2 * report.c_max)})"
        )
    lines += [f"  {line}" for line in engine or ()]
    if report.ok:
        lines.append("no violations")
    else:
        lines.append(f"{counted(report.violation_count, 'violation')}; the first {count(len(report.violations))}:")
        lines += [f"  seq {count(v.seq)}: [{v.rule}] {v.message}" for v in report.violations]
    return "\n".join(lines)


def suspended(suspension: Suspension) -> str:
    """Where a group's bound did not hold, as the merge rows say."""
    who = "a replica" if suspension.replica is None else f"replica {suspension.replica}"
    since = "" if suspension.since_seq is None else f"from seq {count(suspension.since_seq)} "
    merged = f"seq {count(suspension.seq)}" if suspension.last_seq == suspension.seq else \
        f"seqs {count(suspension.seq)} to {count(suspension.last_seq)}"
    return f"the group's bound was suspended {since}to seq {count(suspension.seq)}: {who} served on its own; its charges were merged at {merged}"


@refuses_bad_input
def check(log: Annotated[Path, typer.Argument(help="Event-log Parquet file written by simulate (or any §7 log).", show_default=False)]) -> None:
    """Verify LOG: seq and time order, each request's life, and for SFQ logs every join,
    pick, charge and idle reset, the band invariant of §3.1 and the 2 c_max bound of
    §3.2/§3.3. For DRR logs: deficits and credits. For VTC logs: every join, pick and
    charge of §9. A log of several replicas (semantics §11): the router and each
    replica's slots, then those rules on each replica under share none, each replica's
    rules and every sync row under share sync (docs/semantics.md), the whole log under
    share global. A recording that joined a proxy late is audited from the proxy's state
    at the join (its snapshot), and a live group's merge rows are checked and say where
    the group's bound was suspended (docs/semantics.md §7). A log with start rows (a
    replay with the engine model, a proxy's stream whose engine reports when requests
    start running, or the replay of its recording as it ran) also gets the worst |W_i - W_j| at engine start beside the one at
    dispatch, and how many starts came out of order; a proxy's stream without them says
    that fairness at engine start is not available. The log is read in batches.
    Exits 1 on any violation. A trace (a proxy's --record file) is checked once replayed:
    sfqtui simulate TRACE -o log.parquet, then sfqtui check log.parquet.
    """
    _refuse_a_trace(log)
    metadata, _columns, scheduler = read_log_schema(log)
    replicas = ReplicaSettings.from_metadata(metadata.get("replicas"))
    slots = metadata.get("slots")
    # Fairness at engine start: for a log with start rows, and said to be unknown for a proxy's without.
    recorded = str(metadata.get("source", "")).startswith("live stream")
    starts = FairnessTally(at_engine_start=True) if recorded or has_kind(log, "start") else None
    rows = iter_log_rows(log)
    report = audit(rows if starts is None else _feeding(rows, starts), output_weight=output_weight_of(metadata),
                   replicas=Replicas(replicas, slots if isinstance(slots, int) else None),
                   snapshot=Snapshot.from_metadata(metadata.get("snapshot")), policy=PolicyLog.from_metadata(metadata))
    typer.echo(render(report, log, replicas, None if starts is None else engine_start_lines(starts.report(scheduler))))
    if not report.ok:
        raise typer.Exit(1)


def _refuse_a_trace(path: Path) -> None:
    """InputError for a trace (requests, semantics §1: a proxy's --record file, or what gen or
    import wrote) given for a log: what it is, and the commands that check its replay."""
    read_parquet_header(path, what="event log")
    names = set(pq.read_schema(path).names)
    if set(LOG_COLUMNS) <= names or not set(REQUIRED) <= names:
        return
    recorded = read_metadata(path).get("source") == "sfqtui proxy"
    what = "a proxy's recording (a trace of the requests it dispatched)" if recorded else "a trace (requests, semantics §1)"
    again = " (the proxy's decisions again)" if recorded else ""
    raise InputError(f"{path}: {what}, not an event log: `sfqtui simulate {shlex.quote(str(path))} -o log.parquet` replays it into one{again}, "
                     "then `sfqtui check log.parquet`")


def _feeding(chunks: Iterable[LogRows], tally: FairnessTally) -> Iterator[LogRows]:
    """The chunks, each fed to ``tally`` on the way (with the weights the rows carry)."""
    for rows in chunks:
        if rows.weight is not None:
            for user, weight in zip(rows.user, rows.weight):
                if user is not None and weight is not None:
                    tally.weights.setdefault(user, weight)
        tally.feed(rows)
        yield rows
