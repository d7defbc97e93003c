"""Envoy AI Gateway access logs in JSON, one line per request through the gateway.

The fields, as the gateway's access-log guide configures them (envoyproxy/ai-gateway,
site/docs/capabilities/observability/accesslogs.md and
examples/accesslogs-envoy-proxy-llm.yaml): ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens`` and ``gen_ai.request.model`` (before 0.6:
``genai_tokens_input``, ``genai_tokens_output``, ``genai_model_name``), taken from the
``io.envoy.ai_gateway`` dynamic metadata; Envoy's own ``start_time`` (``%START_TIME%``,
ISO 8601), ``duration`` (``%DURATION%``: milliseconds from the start to the last byte
sent) and ``response_code``. A request the gateway did not count tokens for (an MCP call,
a route without ``llmRequestCosts``) has null or ``-`` there and is left out. The user is
any field the operator logs, e.g. ``"x-user-id": "%REQ(X-USER-ID)%"`` or ``session.id``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from sfqtui.errors import InputError
from sfqtui.importers.gateway import LogOptions, LogRows, Skip, first_bad, missing, policy_columns, whole_numbers
from sfqtui.importers.readers import parse_datetime
from sfqtui.importers.records import read_records

# each value: the field today, then the field before 0.6
NAMES = {
    "input": ("gen_ai.usage.input_tokens", "genai_tokens_input"),
    "output": ("gen_ai.usage.output_tokens", "genai_tokens_output"),
    "model": ("gen_ai.request.model", "genai_model_name"),
}
FIELDS = ("start_time", "duration", "response_code", *(name for names in NAMES.values() for name in names))
ONE_USER = "all"


def read_envoy(path: Path, options: LogOptions) -> LogRows:
    user = options.user_from
    policy = dict(options.policy_from)  # trace column -> the field the access log writes it in (%REQ(X-PRIORITY)% as x-priority)
    extra = {name for name in (user, *policy.values()) if name and name not in FIELDS}
    frame = read_records(path, (*FIELDS, *sorted(extra)), "envoy-ai-gateway")
    if frame["start_time"].is_null().all():
        raise InputError(f"{path}: no line has a start_time: is this an Envoy access log in JSON (%START_TIME% as start_time)?")
    if user is not None and frame[user].is_null().all():
        raise InputError(f"--user-from {user!r}: no line of {path} has this field; name one the access log writes (e.g. x-user-id)")
    frame = frame.with_columns(
        pl.when(~missing(name)).then(pl.col(name)).alias(name) for name in frame.columns if name != "where"
    ).with_columns(
        pl.coalesce(*NAMES["input"]).alias("input"),
        pl.coalesce(*NAMES["output"]).alias("output"),
        pl.coalesce(*NAMES["model"]).alias("model"),
        pl.col("response_code").cast(pl.Int64, strict=False).alias("code"),
    )
    read, skipped = frame.height, Counter[Skip]()
    if not options.keep_failed:
        failed = (pl.col("code") == 0) | (pl.col("code") >= 400)
        skipped[Skip("failed request", "response_code 0 or >= 400; --keep-failed keeps them")] = int(frame.select(failed.fill_null(False).sum()).item())
        frame = frame.filter(~failed.fill_null(False))
    uncounted = pl.col("input").is_null() & pl.col("output").is_null()
    no_tokens = Skip("line without token counts", "MCP calls, routes without llmRequestCosts", "lines without token counts")
    skipped[no_tokens] = int(frame.select(uncounted.sum()).item())
    frame = frame.filter(~uncounted)

    frame = frame.with_columns(parse_datetime("start_time").alias("start"), pl.col("duration").cast(pl.Float64, strict=False).alias("ms"))
    first_bad(frame, path, pl.col("start").is_null(), "start_time", "is not a time")
    first_bad(frame, path, pl.col("duration").is_null(), "duration", "is missing")
    first_bad(frame, path, pl.col("ms").is_null() | ~(pl.col("ms") >= 0), "duration", "is not a duration in milliseconds >= 0")
    first_bad(frame, path, pl.col("input").is_null(), "input tokens", f"are missing ({' or '.join(NAMES['input'])})")
    tokens_in, bad_in = whole_numbers("input")
    tokens_out, bad_out = whole_numbers("output")
    first_bad(frame, path, bad_in, _present(frame, NAMES["input"]), "is not a whole number >= 0", shown="input")
    first_bad(frame, path, bad_out, _present(frame, NAMES["output"]), "is not a whole number >= 0", shown="output")
    rows = frame.select(
        pl.format("{}:{}", pl.lit(path.stem), pl.col("where").str.extract(r"(\d+)$")).alias("request_id"),
        (pl.col(user).fill_null("(none)") if user else pl.lit(ONE_USER)).alias("user"),
        "start",
        (pl.col("ms") / 1000).alias("service_s"),
        pl.lit(None, pl.Float64).alias("ttft_s"),
        tokens_in.alias("input_tokens"),
        tokens_out.alias("output_tokens"),
        pl.lit(None, pl.Int64).alias("max_tokens"),
        "model",
        pl.lit(path.name).alias("source"),
        "where",
        *policy_columns(frame, path, {column: pl.col(key) for column, key in policy.items()}),
    )
    return LogRows(rows, read, +skipped)


def _present(frame: pl.DataFrame, names: tuple[str, ...]) -> str:
    """The name the log uses for a value (today's or the older one)."""
    return next((name for name in names if frame[name].is_not_null().any()), names[0])
