"""`sfqtui import`: convert real traces to the semantics §1 schema."""

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.core.numbers import Fixed, counted
from sfqtui.importers.formats import IMPORT_FORMATS, importer
from sfqtui.importers.gateway import LogSummary
from sfqtui.importers.logs import LOG_FORMATS
from sfqtui.importers.options import ASSIGNS, TIME_UNITS, ImportOptions, MaxTokens, Users, parse_mapping, parse_policy_from
from sfqtui.paths import check_output
from sfqtui.trace.offered_load import HEADROOM, duration

TENTHS = Fixed(1)  # the summary's seconds and slots busy


@refuses_bad_input
def import_command(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=f"One of: {', '.join(IMPORT_FORMATS)}.", show_default=False)],
    sources: Annotated[list[Path], typer.Argument(metavar="SRC", help="Source files (several share one clock).", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Trace Parquet file to write.")],
    user_from: Annotated[str | None, typer.Option(
        "--user-from", "--user-attr",
        help="Take users from this source column (e.g. 'Session ID', 'Model', 'Log Type'); litellm: api_key (the default), user, team_id "
             "or end_user; envoy-ai-gateway: a field the log writes (x-user-id, session.id); otel: a span or resource attribute "
             "(default user.id, else enduser.id).")] = None,
    users: Annotated[int | None, typer.Option("--users", help="Assign N synthetic users instead.")] = None,
    assign: Annotated[str, typer.Option("--assign", help=f"How synthetic users are drawn: {', '.join(ASSIGNS)}.")] = "zipf",
    seed: Annotated[int, typer.Option("--seed", help="Seed for --assign and --jitter.")] = 0,
    max_tokens: Annotated[
        str,
        typer.Option(
            "--max-tokens",
            help="none, fixed:N (a cap of N), bucket:N (the output rounded up to a multiple of N) or pow2:N (up to a power of two, at least N).",
        ),
    ] = "none",
    keep_failed: Annotated[bool, typer.Option(
        "--keep-failed", help="burstgpt: keep failed requests (0 response tokens); litellm, otel, envoy-ai-gateway: keep failed calls.")] = False,
    jitter: Annotated[float, typer.Option("--jitter", help="mooncake: spread arrivals over this many seconds after their clump's timestamp.")] = 0.0,
    mapping: Annotated[
        str | None,
        typer.Option("--map", help="csv/jsonl: the trace's columns from the source's, as comma-separated NAME=COLUMN pairs (an example above)."),
    ] = None,
    time_unit: Annotated[str, typer.Option("--time-unit", help=f"csv/jsonl: the arrival column's unit: {', '.join(TIME_UNITS)}.")] = "s",
    policy_from: Annotated[str | None, typer.Option(
        "--policy-from",
        help="litellm, otel, envoy-ai-gateway: the trace's priority, flow and class (semantics §15) as COLUMN=KEY pairs, e.g. "
             "priority=x-priority,flow=x-tenant. litellm: a row's field or FIELD.KEY inside its JSON (default priority="
             "proxy_server_request.priority, LiteLLM's request priority); otel: a request header (http.request.header.KEY) or "
             "an attribute; envoy-ai-gateway: a field the access log writes (%REQ(X-PRIORITY)% as x-priority). "
             "csv/jsonl map them with --map.")] = None,
) -> None:
    """Convert real traces (Azure LLM inference, BurstGPT, Mooncake, any CSV/JSONL) and
    gateways' request logs (LiteLLM, OpenTelemetry, Envoy AI Gateway) to a trace every
    command replays.

    Arrival times become seconds from the first request of all files; request ids are
    FILE:LINE. The formats:

    **azure**: TIMESTAMP, ContextTokens, GeneratedTokens; each file is a service (its model and, by default, its user).

    **burstgpt**: Timestamp, Model, Request tokens, Response tokens, Log Type (+ Session ID); failed rows dropped unless --keep-failed.

    **mooncake**: JSONL with timestamp (ms), input_length, output_length.

    **csv** / **jsonl**: any columns, named with --map, time read with --time-unit, e.g.
    --map arrival_s=t,input_tokens=prompt,output_tokens=completion --time-unit ms.

    Gateway request logs keep their measured times: `service_s` (how long each call took)
    and, where logged, `ttft_s` (time to first token), so replays use them instead of the
    service model (docs/traces.md, "Gateway logs"):

    **litellm**: LiteLLM_SpendLogs rows (JSON lines, the spend-logs API's JSON array, or CSV), e.g.
    `sfqtui import litellm spend_logs.json -o t.parquet --user-from team_id`. Keys are named by a digest, never shown.

    **otel**: an OTLP/JSON trace export; one row per model call (spans with gen_ai.usage.*, vLLM's llm_request), e.g.
    `sfqtui import otel traces.jsonl -o t.parquet --user-attr tenant.id`.

    **envoy-ai-gateway**: Envoy AI Gateway JSON access logs; lines without token counts (MCP calls) are skipped, e.g.
    `sfqtui import envoy-ai-gateway access.log -o t.parquet --user-from x-user-id`.
    """
    run = importer(fmt)
    if time_unit not in TIME_UNITS:
        raise fail(f"--time-unit must be one of {', '.join(TIME_UNITS)}")
    if jitter < 0:
        raise fail("--jitter must be >= 0")
    if policy_from and fmt not in LOG_FORMATS:
        raise fail(f"--policy-from reads gateway logs ({', '.join(LOG_FORMATS)}); for {fmt}, map the columns with --map priority=COLUMN,...")
    check_output(output, not_one_of=sources)
    options = ImportOptions(
        users=Users(column=user_from, count=users, assign=assign, seed=seed),  # type: ignore[arg-type]  # Users refuses any other name
        max_tokens=MaxTokens.parse(max_tokens),
        keep_failed=keep_failed,
        jitter_s=jitter,
        seed=seed,
        mapping=parse_mapping(mapping),
        time_unit=time_unit,
        policy_from=parse_policy_from(policy_from),
    )
    console = Console(file=sys.stderr)
    with console.status("importing") as status:
        summary = run(fmt, sources, output, options, lambda message: status.update(message))
    typer.echo(f"wrote {output}: {counted(summary.rows, 'request')} from {counted(summary.users, 'user')}, {counted(summary.files, 'file')}, "
               f"{TENTHS(summary.span_s)} s of arrivals")
    if summary.slots is not None and summary.offered_load is not None:
        typer.echo(f"replays use {counted(summary.slots, 'slot')} unless --slots is given: the trace keeps {_slots_busy(summary.offered_load)} "
                   f"busy on average ({summary.service}), plus {HEADROOM - 1:.0%} headroom; docs/traces.md")
    if isinstance(summary, LogSummary):
        typer.echo("\n".join(summary.lines()))
    if summary.between_files_s > summary.span_s / 2:
        typer.echo(f"note: the files are far apart in time: their arrivals span {duration(summary.span_s)}, of which {duration(summary.between_files_s)} "
                   "lie between files, where a replay has nothing to schedule; import one file per trace", err=True)
    if summary.users == 1:
        typer.echo("note: every request has the same user; --users N or --user-from COLUMN gives SFQ someone to be fair between", err=True)


def _slots_busy(load: float) -> str:
    """The trace's offered load in slots, to a tenth; a load that rounds to none is not none."""
    return "less than 0.1 slot" if load < 0.05 else f"{TENTHS(load)} slots"
