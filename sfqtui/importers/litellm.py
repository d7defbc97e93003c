"""LiteLLM proxy spend logs: rows of its ``LiteLLM_SpendLogs`` table, one per call.

The fields, as the table defines them (BerriAI/litellm, schema.prisma, model
LiteLLM_SpendLogs): ``request_id``; ``api_key`` (a hash of the virtual key, never the key);
``startTime``, ``endTime`` and ``completionStartTime`` (the first chunk of a streamed
answer; the end of one that was not streamed), ``request_duration_ms``;
``prompt_tokens``, ``completion_tokens``; ``model`` (the deployment) and ``model_group``
(the name the client asked for); ``user``, ``team_id``, ``end_user``; ``status``
(``success`` or ``failure``); ``call_type`` and ``mcp_namespaced_tool_name`` (MCP tool calls,
which carry no tokens). The proxy's spend-logs API answers a JSON array of these rows;
a database export gives CSV, a log pipeline JSON lines. Times come with a zone (``Z``,
``+00:00``) or without one (UTC): both occur.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import polars as pl

from sfqtui.errors import InputError
from sfqtui.importers.gateway import LogOptions, LogRows, Skip, first_bad, policy_columns, seconds_between, whole_numbers
from sfqtui.importers.readers import parse_datetime
from sfqtui.importers.records import read_records

USER_FIELDS = ("api_key", "user", "team_id", "end_user")
DEFAULT_USER = "api_key"  # the one principal every proxied call has: the virtual key it came with
FIELDS = (
    "request_id", "startTime", "endTime", "completionStartTime", "request_duration_ms", "prompt_tokens",
    "completion_tokens", "model", "model_group", "status", "call_type", "mcp_namespaced_tool_name", *USER_FIELDS,
)
NO_USER = "(none)"
# LiteLLM's request priority (the `priority` parameter, lower served first) is in the request body the row keeps
DEFAULT_POLICY = {"priority": "proxy_server_request.priority"}


def read_litellm(path: Path, options: LogOptions) -> LogRows:
    user_field = options.user_from or DEFAULT_USER
    if user_field not in USER_FIELDS:
        raise InputError(f"--user-from {user_field!r}: a LiteLLM spend log names its users by {', '.join(USER_FIELDS)}")
    policy = {**DEFAULT_POLICY, **dict(options.policy_from)}
    frame = read_records(path, (*FIELDS, *{key.partition(".")[0] for key in policy.values()} - set(FIELDS)), "litellm")
    if frame["startTime"].is_null().all():
        raise InputError(f"{path}: no record has a startTime: is this LiteLLM's spend log (LiteLLM_SpendLogs rows)?")
    read, skipped = frame.height, Counter[Skip]()
    tool_call = pl.col("mcp_namespaced_tool_name").is_not_null() | (pl.col("call_type") == "call_mcp_tool").fill_null(False)
    skipped[Skip("MCP tool call", "no tokens")] = int(frame.select(tool_call.sum()).item())
    frame = frame.filter(~tool_call)
    if not options.keep_failed:
        failed = (pl.col("status") == "failure").fill_null(False)
        skipped[Skip("failed call", "status failure; --keep-failed keeps them")] = int(frame.select(failed.sum()).item())
        frame = frame.filter(~failed)

    frame = frame.with_columns(
        parse_datetime("startTime").alias("start"),
        parse_datetime("endTime").alias("end"),
        parse_datetime("completionStartTime").alias("first"),
        pl.col("request_duration_ms").cast(pl.Float64, strict=False).alias("duration_ms"),
    )
    first_bad(frame, path, pl.col("startTime").is_null(), "startTime", "is missing")
    first_bad(frame, path, pl.col("start").is_null(), "startTime", "is not a time")
    first_bad(frame, path, pl.col("endTime").is_not_null() & pl.col("end").is_null(), "endTime", "is not a time")
    first_bad(frame, path, pl.col("completionStartTime").is_not_null() & pl.col("first").is_null(), "completionStartTime", "is not a time")
    unreadable_ms = pl.col("duration_ms").is_null() | ~(pl.col("duration_ms") >= 0)
    first_bad(frame, path, pl.col("request_duration_ms").is_not_null() & unreadable_ms, "request_duration_ms", "is not a duration >= 0")
    first_bad(frame, path, pl.col("end").is_null() & pl.col("duration_ms").is_null(), "endTime", "is missing, and so is request_duration_ms")
    first_bad(frame, path, pl.col("end") < pl.col("start"), "endTime", "is before startTime")
    service = pl.coalesce(seconds_between(pl.col("start"), pl.col("end")), pl.col("duration_ms") / 1000)
    ttft = seconds_between(pl.col("start"), pl.col("first"))
    frame = frame.with_columns(service.alias("service_s"), ttft.alias("ttft_s"))
    first_bad(frame, path, (pl.col("ttft_s") < 0) | (pl.col("ttft_s") > pl.col("service_s")), "completionStartTime",
              "is not between startTime and endTime")

    prompt, bad_prompt = whole_numbers("prompt_tokens")
    completion, bad_completion = whole_numbers("completion_tokens")
    first_bad(frame, path, pl.col("prompt_tokens").is_null(), "prompt_tokens", "is missing")
    first_bad(frame, path, bad_prompt, "prompt_tokens", "is not a whole number >= 0")
    first_bad(frame, path, bad_completion, "completion_tokens", "is not a whole number >= 0")
    rows = frame.select(
        pl.coalesce("request_id", pl.format("{}:{}", pl.lit(path.stem), pl.col("where").str.extract(r"(\d+)$"))).alias("request_id"),
        _users(frame, user_field).alias("user"),
        "start", "service_s", "ttft_s",
        prompt.alias("input_tokens"),
        completion.alias("output_tokens"),
        pl.lit(None, pl.Int64).alias("max_tokens"),
        pl.coalesce("model_group", "model").alias("model"),
        pl.lit(path.name).alias("source"),
        "where",
        *policy_columns(frame, path, {column: _field(key) for column, key in policy.items()}),
    )
    return LogRows(rows, read, +skipped)


def _field(key: str) -> pl.Expr:
    """A row's field, or with ``FIELD.KEY`` a key inside a JSON field (metadata, proxy_server_request)."""
    field, dot, inner = key.partition(".")
    return pl.col(field).str.json_path_match(f"$.{inner}") if dot else pl.col(field)


def _users(frame: pl.DataFrame, field: str) -> pl.Expr:
    """The user of each call; a key is shown as ``key-`` and a digest of its hash, so the trace never holds it."""
    if field != "api_key":
        return pl.col(field).fill_null(NO_USER)
    keys = frame["api_key"].drop_nulls().unique().to_list()
    names = ["key-" + hashlib.sha256(key.encode()).hexdigest()[:10] for key in keys]
    return pl.col("api_key").replace_strict(keys, names, default=NO_USER, return_dtype=pl.String)
