"""`sfqtui fit`: the engine model fitted to a recording's measured times, and its error on held-out requests."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sfqtui import __version__
from sfqtui.cli.errors import refuses_bad_input
from sfqtui.cli.tables import print_table, report_console
from sfqtui.core.analysis.engine_fit.errors import Errors
from sfqtui.core.analysis.engine_fit.fit import EngineFit, fit_engine
from sfqtui.core.analysis.engine_fit.waits import ReplayedErrors
from sfqtui.core.numbers import amount, count, counted, percent, seconds
from sfqtui.errors import InputError
from sfqtui.paths import check_output
from sfqtui.runs.opening import is_event_log
from sfqtui.trace.fit_replay import replayed
from sfqtui.trace.joined import expanded, joined_trace, named
from sfqtui.trace.served import ServedTrace, served_requests


@refuses_bad_input
def fit(
    traces: Annotated[list[Path], typer.Argument(
        metavar="RECORDING", show_default=False,
        help="A proxy's recording (sfqtui proxy --record) or a gateway's log imported by sfqtui import (litellm, otel, "
             "envoy-ai-gateway): a trace with service_s, input_tokens and output_tokens. Several files are read as one "
             "(a group's recordings, one a replica).")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", show_default=False,
        help="Write the fitted model here as JSON, for sfqtui engine --model-file; its 'fit' key says what it was fitted on.")] = None,
    max_num_seqs: Annotated[int | None, typer.Option(
        "--max-num-seqs", show_default=False, min=1,
        help="The engine's places in its running batch, when known; default: found, the best fit of 1 up to the most "
             "requests in flight at once.")] = None,
    request_overhead_ms: Annotated[float | None, typer.Option(
        "--request-overhead-ms", show_default=False,
        help="Milliseconds each request spends in the API server before the engine's queue sees it, when known (0: none); "
             "default: found, the best fit of 0 up to the shortest service time.")] = None,
) -> None:
    """Fit the engine model (docs/engine.md) to RECORDING's measured service times.

    Rebuilds each request's life in the engine (the batch sizes it ran at, the prompts
    prefilled meanwhile), fits decode ms per token, prefill µs per token, the batch
    slowdown and the API server's time per request by least squares on relative error
    over the first 80% of the requests by arrival, and reports the absolute percentage error of the service time on the last
    20%, which the fit never saw (median and 90th percentile); then replays the whole
    recording on the fitted model (its arrivals and tokens, not its times) and reports the
    error of the held-out requests' waits (arrival to start in the engine) and of their
    arrival-to-end latencies.
    """
    if request_overhead_ms is not None and request_overhead_ms < 0:
        raise InputError(f"--request-overhead-ms {amount(request_overhead_ms)}: must be a number of at least 0")
    paths = expanded(traces)
    for path in paths:
        if path.exists() and is_event_log(path):
            raise InputError(f"{path} is an event log: fit reads the trace it was replayed from, or a proxy's --record file "
                             "(an event log has no prompt sizes)")
    if out is not None:
        check_output(out, "--out", not_one_of=paths)
    trace = joined_trace(paths)
    found = served_requests(trace)
    fitted = fit_engine(found.served, max_num_seqs, overhead_ms=request_overhead_ms)
    # A model whose steps take no time cannot be replayed: its waits have no prediction to judge.
    waits = replayed(found, fitted) if fitted.model.decode_ms_per_token > 0 else None
    source = named(paths)
    _print(report_console(), source, found, fitted, waits)
    if out is not None:
        out.write_text(json.dumps(model_file(source, found, fitted, waits), indent=2) + "\n")
        typer.echo(f"Wrote {out}: sfqtui engine --model-file {out} serves this model.")
    if fitted.poor:
        # Written all the same (its "fit" key says so), but a script that goes on to predict with it stops here.
        typer.echo(f"sfqtui: warning: a poor fit: {fitted.poor}. The recording's times do not follow the engine model "
                   "(another engine, another load, or times that are not the engine's): do not trust its predictions.", err=True)
        raise typer.Exit(1)


def model_file(source: str, found: ServedTrace, fitted: EngineFit, waits: ReplayedErrors | None) -> dict[str, Any]:
    """The model's parameters, and under ``fit`` what they were fitted on and how well they predict."""
    return {**fitted.model.as_dict(),
            "fit": {"source": source, "requests": len(found.served), **fitted.as_dict(waits), "sent": found.dispatched,
                    **({"left_out": found.left_out} if found.left_out else {}), **({"cached": found.cached} if found.cached else {}),
                    "sfqtui_version": __version__}}


def _print(console: Console, source: str, found: ServedTrace, fitted: EngineFit, waits: ReplayedErrors | None) -> None:
    console.print(f"Engine model fitted to {source}: {counted(len(found.served), 'request')}, {found.dispatched}.",
                  highlight=False, soft_wrap=True)
    if found.left_out:
        console.print(f"({found.left_out}.)", highlight=False, soft_wrap=True)
    if found.cached:
        console.print(f"({found.cached}.)", highlight=False, soft_wrap=True)
    console.print(f"Fitted on the first {count(fitted.fitted)} by arrival; held out the last {count(fitted.held_out)} "
                  f"(from {seconds(fitted.held_out_from_s)} s).", highlight=False, soft_wrap=True)
    model = fitted.model
    places = "given" if fitted.places_given else f"the best fit of 1..{count(fitted.most_in_flight)} (most in flight)"
    parameters = Table("parameter", "value", "")
    for column in parameters.columns[1:2]:
        column.justify = "right"
    parameters.add_row("max_num_seqs", count(model.max_num_seqs), places)
    parameters.add_row("decode_ms_per_token", amount(model.decode_ms_per_token), "ms a step takes, alone")
    parameters.add_row("prefill_us_per_token", amount(model.prefill_us_per_token), "µs per prompt token prefilled")
    parameters.add_row("batch_slowdown", amount(model.batch_slowdown), "growth per extra running request")
    if model.shaped:  # the whole shape fitted better (docs/engine.md)
        parameters.add_row("context_us_per_token", amount(model.context_us_per_token), "µs per token of context the batch holds")
        parameters.add_row("slowed_prefill", "yes" if model.slowed_prefill else "no", "the slowdown multiplies the prefill")
    overhead = "given" if fitted.overhead_given else "before the engine's queue"
    parameters.add_row("request_overhead_ms", amount(model.request_overhead_ms), f"ms in the API server, {overhead}")
    print_table(console, parameters)
    errors = Table("absolute percentage error", "requests", "median", "p90")
    for column in errors.columns[1:]:
        column.justify = "right"
    rows: list[tuple[str, Errors | None]] = [("service time, held out", fitted.service_held_out),
                                              ("service time, fitted on", fitted.service_fitted),
                                              ("time to first token, held out", fitted.ttft_held_out),
                                              ("wait, held out (replayed)", None if waits is None else waits.wait),
                                              ("arrival to end, held out (replayed)", None if waits is None else waits.latency)]
    for name, figures in rows:
        if figures is not None and figures.requests:
            errors.add_row(name, count(figures.requests), percent(figures.median), percent(figures.p90))
    print_table(console, errors)
    if waits is None:
        console.print("(No replay of the model: its decode time is 0, and steps that take no time never end.)", highlight=False,
                      soft_wrap=True)
