"""`sfqtui calibrate`: how far the cost estimator is off, whom its errors favour, and what would do better."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.progress import progress_bar
from sfqtui.cli.replay_options import NO_CHOICES, ReplayChoices, with_replicated_replay_options
from sfqtui.cli.tables import print_table, report_console
from sfqtui.core.analysis.cache_calibration import UserCache, cache_calibration
from sfqtui.core.analysis.calibration import CalibrationReport, GapFigure, RatioTrack
from sfqtui.core.analysis.calibration import calibrate as measure_calibration
from sfqtui.core.numbers import Fixed, amount, count, counted, percent, ratio, span
from sfqtui.core.replay.config import slots_said
from sfqtui.core.schedulers.registry import ESTIMATING, check_schedulers
from sfqtui.sweep.alternatives import MIN_CUT, actual_gap, ratio_alternatives, reference_runs, run_alternatives, suggestion
from sfqtui.sweep.runs import Row
from sfqtui.trace.joined import joined_trace
from sfqtui.trace.load import load_trace

SHOWN_ROWS = 20
SPARKS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 40


@refuses_bad_input
@with_replicated_replay_options
def calibrate(
    traces: Annotated[list[Path], typer.Argument(metavar="TRACE", help="Trace Parquet file with output_tokens (semantics §1); several files "
                                                 "are read as one (a group's recordings, one a replica).", show_default=False)],
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help=f"Scheduler that charges the estimate: {', '.join(ESTIMATING)}.")] = "sfq",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object for machines instead of tables.")] = False,
    replay: ReplayChoices = NO_CHOICES,  # with_replicated_replay_options puts the options given here
) -> None:
    """Measure the cost estimator against the actual outputs in TRACE (semantics §10).

    Prints the learned output ratios (final and over time, against the ratio a perfect
    learner would find), each user's charged and actual cost with bias = charged / actual
    (worst first) and its share of each, and the worst |W_i - W_j| between continuously
    backlogged users in actual cost: under this estimator, under the oracle (charges the
    actual cost at dispatch) and under vtc (charges actual output after the fact).
    Every other ratio scope and update rule is replayed too (docs/calibration.md); when
    one cuts the worst gap in actual cost, it is suggested with its figure.

    On the engine model (--engines, --engine-model) and a trace with prefix_blocks, also each
    user's cached input tokens predicted at dispatch against those the engines found, and what
    cache-blind pricing charged for input the engines did not compute (semantics §14).
    """
    check_schedulers([scheduler], ESTIMATING)
    trace = joined_trace(traces)
    loaded = load_trace(trace)
    if loaded.trace.output_tokens is None:
        raise fail(f"{trace}: calibration needs actual outputs, and this trace has no output_tokens column "
                   "(record one through the proxy, or import a log that has them; semantics §10)")
    if replay.replicas.replicated:
        raise fail("calibrate measures one scheduler's estimator: --replicas is not supported")
    config = replay.config(scheduler, loaded.metadata)
    caches = cache_calibration(loaded.trace, config) if replay.engine is not None and loaded.trace.prefix_blocks is not None else None
    references = reference_runs(str(trace), config)
    charges_ratio = not config.estimator.oracle and loaded.trace.cost is None  # else no ratio prices anything
    alternatives = ratio_alternatives(str(trace), loaded.trace, config) if charges_ratio else []
    runs = [*references.values(), *alternatives]
    with progress_bar("calibrating", 1 + len(runs)) as update:
        report = measure_calibration(loaded.trace, config)
        update(1, 1 + len(runs))
        rows, where = run_alternatives(runs, loaded.trace, lambda done, total: update(1 + done, 1 + total))
    note_one_slot(trace, loaded.suggested_slots, replay.slots, replay.service)
    reference_rows = dict(zip(references, rows))
    alternative_rows = rows[len(references):]
    suggested = suggestion(_gap_of(report.gap_actual), alternative_rows)
    if as_json:
        payload = _payload(trace, len(loaded.trace), report, reference_rows, alternative_rows, suggested, where)
        if caches is not None:
            payload["prefix_cache"] = {u.user: u.as_dict() for u in caches}
        typer.echo(json.dumps(payload, indent=2))
        return
    slots = f"{slots_said(config)}{replay.capacity_ignored(loaded.recorded_limits)}"
    console = report_console()
    _print(console, trace, len(loaded.trace), report, reference_rows, alternative_rows, suggested, where, slots)
    if caches is not None:
        print_table(console, _cache_table(caches))


def _cache_table(caches: list[UserCache]) -> Table:
    """Per user: the cached input predicted at dispatch against the cached input found, in tokens."""
    table = Table(title="Cached input tokens per user: predicted at dispatch (cache-aware pricing) vs found by the engine; "
                        "cache-blind pricing charges the cached ones too", title_justify="left", expand=True)
    for header in ("user", "requests", "input", "predicted cached", "cached", "blind overcharge", "aware error"):
        table.add_column(header, justify="left" if header == "user" else "right")
    shown = caches[:SHOWN_ROWS]
    tokens = Fixed(0)
    error = Fixed(0, sign=True)
    for u in shown:
        table.add_row(u.user, count(u.requests), tokens(u.input_tokens), tokens(u.predicted), tokens(u.cached),
                      f"{tokens(u.blind_overcharge)} ({percent(u.cached / u.input_tokens if u.input_tokens else None)})",
                      error(u.aware_error))
    if len(caches) > SHOWN_ROWS:
        table.caption = f"{counted(len(caches) - SHOWN_ROWS, 'more user')} in --json"
    return table


def _gap_of(figure: GapFigure) -> float | None:
    return None if figure.gap is None else figure.gap.gap


def _options(row: Row) -> str:
    return f"--ratio-scope {row['ratio_scope']} --ratio-update {row['ratio_update']}"


def _payload(trace: Path, requests: int, report: CalibrationReport, references: dict[str, Row],
             alternatives: list[Row], suggested: Row | None, where: str) -> dict[str, object]:
    def gap_or_error(row: Row) -> object:
        return {"error": row["error"]} if row["error"] else row["worst_gap_actual"]

    return {
        "trace": str(trace),
        "requests": requests,
        **report.as_dict(),
        "worst_gap_charged": report.gap_charged.as_dict(),
        "worst_gap_actual": {
            "estimator": report.gap_actual.as_dict(),
            **{name: gap_or_error(row) for name, row in references.items()},
        },
        "alternatives": [
            {"ratio_scope": row["ratio_scope"], "ratio_update": row["ratio_update"], "worst_gap_actual": gap_or_error(row)}
            for row in alternatives
        ],
        "alternatives_ran": where,
        "suggestion": None if suggested is None else {
            "ratio_scope": suggested["ratio_scope"], "ratio_update": suggested["ratio_update"],
            "options": _options(suggested), "worst_gap_actual": actual_gap(suggested),
            "current_worst_gap_actual": _gap_of(report.gap_actual),
        },
    }


def _sparkline(samples: list[tuple[float, float]], start: float, end: float, top: float) -> str:
    """One character per equal slice of [start, end]: the ratio in force there, blank before the
    key's first and after its last priced dispatch; heights scaled to ``top``, shared by every key."""
    columns = [" "] * SPARK_WIDTH
    span = (end - start) or 1.0
    for k, (t, learned) in enumerate(samples):
        until = samples[k + 1][0] if k + 1 < len(samples) else t
        level = SPARKS[min(len(SPARKS) - 1, int(learned / top * len(SPARKS)))] if top > 0 else SPARKS[0]
        for c in range(int((t - start) / span * (SPARK_WIDTH - 1)), int((until - start) / span * (SPARK_WIDTH - 1)) + 1):
            columns[c] = level
    return "".join(columns).rstrip()


def _ratio_table(report: CalibrationReport) -> Table:
    p = report.estimator
    tracks: list[RatioTrack] = sorted(report.ratios, key=lambda t: 0.0 if t.actual is None else -abs(t.final - t.actual))
    top = max(r for t in tracks for _, r in t.samples)
    start = min(t.samples[0][0] for t in tracks)
    end = max(t.samples[-1][0] for t in tracks)
    table = Table(title=f"Learned output ratio, scope {p.scope}, update {p.update} (it prices max_tokens, §6)",
                  title_justify="left", expand=True)
    for header in ("key", "first", "final", "actual"):
        table.add_column(header, justify="left" if header == "key" else "right")
    table.add_column(f"over time, t {span(start, end)}", min_width=SPARK_WIDTH, no_wrap=True)
    for track in tracks[:SHOWN_ROWS]:
        table.add_row(track.key, ratio(track.samples[0][1], 3), ratio(track.final, 3), ratio(track.actual, 3),
                      _sparkline(track.samples, start, end, top))
    if len(tracks) > SHOWN_ROWS:
        table.caption = f"{count(len(tracks) - SHOWN_ROWS)} more keys in --json"
    return table


def _bias_table(report: CalibrationReport) -> Table:
    table = Table(title="Charged vs actual cost per user, worst bias first (bias > 1: overcharged; "
                        "gain: actual % - charged %)", title_justify="left", expand=True)
    for header in ("user", "charged", "actual", "bias", "charged %", "actual %", "gain pp"):
        table.add_column(header, justify="left" if header == "user" else "right")
    shown = report.users[:SHOWN_ROWS]
    cost, gain = Fixed.of([x for u in shown for x in (u.charged, u.actual)]), Fixed(1, sign=True)
    for u in shown:
        table.add_row(u.user, cost(u.charged), cost(u.actual), ratio(u.bias), percent(u.share_charged), percent(u.share_actual),
                      gain(u.share_gain * 100))
    captions = []
    if len(report.users) > SHOWN_ROWS:
        captions.append(f"{counted(len(report.users) - SHOWN_ROWS, 'more user')} in --json")
    if report.unmeasured:
        captions.append(f"{counted(report.unmeasured, 'request')} without output_tokens left out")
    table.caption = "; ".join(captions) or None
    return table


def _row_gap(row: Row) -> dict[str, Any] | None:
    """A replay's worst gap in actual cost, as its row holds it (None: none, or the replay failed)."""
    gap = row.get("worst_gap_actual")
    return gap if isinstance(gap, dict) else None


def _gap_text(gap: dict[str, Any] | None, fixed: Fixed) -> tuple[str, str, str]:
    """A gap's cells; ``fixed``: the format of the table's gap column."""
    if gap is None:
        return "-", "-", "-"
    return fixed(gap["gap"]), f"{gap['ahead']} over {gap['behind']}", f"{span(gap['start_t'], gap['end_t'])}"


def _gap_column(gaps: list[dict[str, Any] | None]) -> Fixed:
    return Fixed.of(None if gap is None else gap["gap"] for gap in gaps)


def _gap_table(report: CalibrationReport, references: dict[str, Row]) -> Table:
    table = Table(title="Worst |W_i - W_j| between continuously backlogged users", title_justify="left", expand=True)
    for header in ("in", "under", "gap", "who", "t"):
        table.add_column(header, justify="right" if header == "gap" else "left")
    charged, actual = report.gap_charged.as_dict(), report.gap_actual.as_dict()
    shown = {name: _row_gap(row) for name, row in references.items() if not row["error"]}
    fixed = _gap_column([charged, actual, *shown.values()])
    table.add_row("charged cost", "this estimator", *_gap_text(charged, fixed))
    table.add_row("actual cost", "this estimator", *_gap_text(actual, fixed))
    for name, row in references.items():
        if row["error"]:
            table.add_row("actual cost", name, "-", str(row["error"]), "")
        else:
            table.add_row("actual cost", name, *_gap_text(shown[name], fixed))
    return table


def _alternatives_table(alternatives: list[Row], where: str) -> Table:
    table = Table(title=f"Other ratio rules, worst gap in actual cost (ran {where})", title_justify="left", expand=True)
    for header in ("scope", "update", "gap", "who"):
        table.add_column(header, justify="right" if header == "gap" else "left")
    rows = sorted(alternatives, key=lambda r: (actual_gap(r) is None, actual_gap(r) or 0.0))
    fixed = _gap_column([_row_gap(row) for row in rows])
    for row in rows:
        gap, who, _ = _gap_text(_row_gap(row), fixed)
        table.add_row(str(row["ratio_scope"]), str(row["ratio_update"]), gap, str(row["error"] or who))
    return table


def _print(console: Console, trace: Path, requests: int, report: CalibrationReport, references: dict[str, Row],
           alternatives: list[Row], suggested: Row | None, where: str, slots: str) -> None:
    p = report.estimator
    estimator = "oracle" if p.oracle else f"ratio, scope {p.scope}, update {p.update}"
    if report.cost_source == "column":
        estimator = "the trace's cost column"
    console.print(f"{trace}: {counted(requests, 'request')}; {report.scheduler}, {slots}; charged: {estimator} "
                  f"(a = {amount(p.input_weight)}, b = {amount(p.output_weight)})")
    if report.ratios:
        print_table(console, _ratio_table(report))
    print_table(console, _bias_table(report))
    print_table(console, _gap_table(report, references))
    if alternatives:
        print_table(console, _alternatives_table(alternatives, where))
    current = _gap_of(report.gap_actual)
    if suggested is not None:
        console.print(f"Suggestion: {_options(suggested)} cuts the worst gap in actual cost from {amount(current)} "
                      f"to {amount(actual_gap(suggested))} (oracle: {amount(actual_gap(references['oracle']))}).")
    elif alternatives:
        console.print(f"No other ratio scope or update rule cuts the worst gap in actual cost by {MIN_CUT:.0%} or more.")
