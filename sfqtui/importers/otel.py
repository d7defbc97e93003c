"""OpenTelemetry traces in OTLP/JSON: one trace row per model call.

The encoding (opentelemetry-proto, docs/specification.md "JSON Protobuf Encoding", and
opentelemetry/proto/trace/v1/trace.proto): ``resourceSpans`` -> ``scopeSpans`` -> ``spans``;
ids in hex; ``startTimeUnixNano``/``endTimeUnixNano`` and ``intValue`` as decimal strings
(numbers are read too); attributes as ``{"key": .., "value": {"intValue": "12"}}``;
``status.code`` 2 is an error. A file is one such document or, as the collector's file
exporter writes, one per line.

A model call is a span with token usage: the GenAI semantic conventions
(open-telemetry/semantic-conventions, docs/gen-ai/gen-ai-spans.md)
``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.request.max_tokens``,
``gen_ai.request.model``/``gen_ai.response.model``, or the older
``gen_ai.usage.prompt_tokens``/``completion_tokens``. vLLM's ``llm_request`` span
(vllm-project/vllm, vllm/tracing.py, SpanAttributes) adds ``gen_ai.latency.e2e``,
``time_in_queue`` and ``time_to_first_token`` in seconds, and starts at the arrival.

A call is counted once when spans nest: when a span with usage has a descendant with
usage, the descendant is kept (the innermost). The inner span is the call to the model
server; an outer one (a framework's step, an SDK wrapper, a gateway's span) encloses its
own overhead and, for an agent step, several calls whose usage it sums: keeping it would
count those calls once with the wrong time, keeping the innermost counts each with its own.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sfqtui.errors import InputError
from sfqtui.importers.gateway import LogOptions, LogRows, Skip, policy_columns

INPUT = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
MODEL = ("gen_ai.request.model", "gen_ai.response.model")
USER = ("user.id", "enduser.id")
E2E, QUEUE, TTFT = "gen_ai.latency.e2e", "gen_ai.latency.time_in_queue", "gen_ai.latency.time_to_first_token"
ERROR = (2, "STATUS_CODE_ERROR")
NO_USER = "(none)"
WRAPPER = Skip("wrapper span", "a span inside carries the usage")
FAILED = Skip("failed call", "status error; --keep-failed keeps them")
NO_INPUT = Skip("call", "output tokens but no input tokens")


@dataclass(frozen=True)
class _Span:
    key: tuple[str, str]  # (traceId, spanId)
    parent: tuple[str, str] | None
    where: str
    name: str
    start_ns: object
    end_ns: object
    attributes: dict[str, Any]
    resource: dict[str, Any]
    failed: bool


def read_otel(paths: list[Path], options: LogOptions) -> list[LogRows]:
    """Every file's model calls. Files are read together: a call's wrapper or its user may
    be in another file (an application's export and its model server's)."""
    files = [(path, [span for line, document in _documents(path) for span in _spans(document, line, path)]) for path in paths]
    spans = {span.key: span for _, found in files for span in found}
    usage = {key for key, span in spans.items() if _first(span.attributes, INPUT + OUTPUT) is not None}
    wrappers = set()  # usage spans with a usage span below them
    for key in usage:
        for ancestor in _ancestors(spans, key):
            if ancestor.key in wrappers:
                break  # its own ancestors were walked when it was found
            if ancestor.key in usage:
                wrappers.add(ancestor.key)
    parts = []
    for path, found in files:
        skipped = Counter[Skip]({WRAPPER: sum(s.key in wrappers for s in found)})
        rows = []
        for span in found:
            if span.key not in usage or span.key in wrappers:
                continue
            if span.failed and not options.keep_failed:
                skipped[FAILED] += 1
            elif _first(span.attributes, INPUT) is None:
                skipped[NO_INPUT] += 1
            else:
                rows.append((*_row(span, path, _user(spans, span, options.user_from)),
                             *(_header(spans, span, key) for _, key in options.policy_from)))
        schema = {**_SCHEMA, **{f"policy {column}": pl.String for column, _ in options.policy_from}}
        frame = pl.DataFrame(rows, schema=schema, orient="row")
        frame = frame.with_columns(pl.from_epoch("start_ns", time_unit="ns").alias("start"), pl.lit(path.name).alias("source"),
                                   *policy_columns(frame, path, {column: pl.col(f"policy {column}") for column, _ in options.policy_from}))
        parts.append(LogRows(frame, len(found), +skipped))
    return parts


_SCHEMA = {"request_id": pl.String, "user": pl.String, "start_ns": pl.Int64, "service_s": pl.Float64, "ttft_s": pl.Float64,
           "input_tokens": pl.Int64, "output_tokens": pl.Int64, "max_tokens": pl.Int64, "model": pl.String, "where": pl.String}


def _ancestors(spans: dict[tuple[str, str], _Span], key: tuple[str, str]) -> Iterator[_Span]:
    """The span's parent, its parent's parent, ... as far as the files have them (a broken export may loop)."""
    parent, steps = spans[key].parent, 0
    while parent in spans and steps < len(spans):
        yield spans[parent]
        parent, steps = spans[parent].parent, steps + 1


def _user(spans: dict[tuple[str, str], _Span], span: _Span, attribute: str | None) -> str:
    """The call's user: on the span, else the nearest ancestor that has it (an application sets
    ``user.id`` on its request's span, not on the model call), else on the span's resource."""
    names = (attribute,) if attribute else USER
    for holder in (span, *_ancestors(spans, span.key)):
        found = _first(holder.attributes, names)
        if found is not None:
            return str(found)
    found = _first(span.resource, names)
    return NO_USER if found is None else str(found)


def _header(spans: dict[tuple[str, str], _Span], span: _Span, key: str) -> str | None:
    """A request header the gateway recorded (``http.request.header.<key>``, OTel's convention, a
    list of values: the first), or an attribute of that name, on the span or its nearest ancestor."""
    names = (key, f"http.request.header.{key.lower()}")
    for holder in (span, *_ancestors(spans, span.key)):
        found = _first(holder.attributes, names)
        if isinstance(found, str) and found.startswith('{"arrayValue"'):  # kept as JSON text by _attributes
            values = json.loads(found)["arrayValue"].get("values") or [{}]
            found = next(iter(_attributes([{"key": key, "value": values[0]}]).values()), None)
        if found is not None:
            return str(found)
    return None


def _row(span: _Span, path: Path, user: str) -> tuple[object, ...]:
    def fail(what: str) -> InputError:
        return InputError(f"{path}: {span.where} (span {span.name!r}): {what}")

    def tokens(names: tuple[str, ...], least: int = 0) -> int | None:
        value = _first(span.attributes, names)
        if value is None:
            return None
        number = _whole(value)
        if number is None or number < least:
            name = next(n for n in names if n in span.attributes)
            raise fail(f"{name} {value!r} is not a whole number >= {least}")
        return number

    def seconds(name: str) -> float | None:
        value = span.attributes.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise fail(f"{name} {value!r} is not a number of seconds")
        try:
            number = float(value)
        except ValueError:
            raise fail(f"{name} {value!r} is not a number of seconds") from None
        if not number >= 0 or number == float("inf"):
            raise fail(f"{name} {value!r} is not a number of seconds >= 0")
        return number

    def nanoseconds(name: str, given: object) -> int:
        value = _whole(given)
        if value is None:
            raise fail(f"{name} is missing" if given is None else f"{name} {given!r} is not a time in nanoseconds")
        return value

    start, end = nanoseconds("startTimeUnixNano", span.start_ns), nanoseconds("endTimeUnixNano", span.end_ns)
    if end < start:
        raise fail("endTimeUnixNano is before startTimeUnixNano")
    e2e, queue, ttft = seconds(E2E), seconds(QUEUE) or 0.0, seconds(TTFT)
    # vLLM's span covers the wait in its own queue; the replay queues requests itself, so the
    # service is what follows the wait (ttft likewise, from the start of the service)
    service = max(0.0, (e2e if e2e is not None else (end - start) / 1e9) - queue)
    first = None if ttft is None else min(service, max(0.0, ttft - queue))
    model = _first(span.attributes, MODEL)
    return (span.key[1], user, start, service, first, tokens(INPUT), tokens(OUTPUT),
            tokens(("gen_ai.request.max_tokens",), least=1), None if model is None else str(model), span.where)


def _documents(path: Path) -> list[tuple[int | None, Any]]:
    """The file's OTLP documents: the whole file, or one a line (with its line number)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        raise InputError(f"{path}: the file is empty")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise InputError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
        documents: list[tuple[int | None, Any]] = []
        for k, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    documents.append((k, json.loads(line)))
                except json.JSONDecodeError as bad:
                    raise InputError(f"{path}: line {k}: not JSON ({bad.msg}, column {bad.colno})") from None
        return documents
    return [(None, document) for document in whole] if isinstance(whole, list) else [(None, whole)]


def _spans(document: Any, line: int | None, path: Path) -> list[_Span]:
    at = f"line {line}: " if line is not None else ""
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
        raise InputError(f"{path}: {at or ''}no resourceSpans: not an OTLP/JSON trace export")
    spans = []
    for r, resource_spans in enumerate(document["resourceSpans"]):
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        for s, scope_spans in enumerate(resource_spans.get("scopeSpans") or []):
            for k, span in enumerate(scope_spans.get("spans") or []):
                where = f"{at}resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                trace_id = str(span.get("traceId", ""))
                parent = span.get("parentSpanId")
                code = (span.get("status") or {}).get("code")
                spans.append(_Span(
                    key=(trace_id, str(span.get("spanId", where))),
                    parent=(trace_id, str(parent)) if parent else None,
                    where=where,
                    name=str(span.get("name", "")),
                    start_ns=span.get("startTimeUnixNano"),
                    end_ns=span.get("endTimeUnixNano"),
                    attributes=_attributes(span.get("attributes")),
                    resource=resource,
                    failed=code in ERROR,
                ))
    return spans


def _attributes(pairs: Any) -> dict[str, Any]:
    """OTLP's ``[{"key": k, "value": {"intValue": "12"}}]`` as ``{k: "12"}`` (arrays and maps as JSON text)."""
    found: dict[str, Any] = {}
    for pair in pairs or []:
        value = pair.get("value") or {}
        for kind in ("stringValue", "intValue", "doubleValue", "boolValue"):
            if kind in value:
                found[pair.get("key", "")] = value[kind]
                break
        else:
            if value:
                found[pair.get("key", "")] = json.dumps(value)
    return found


def _first(attributes: dict[str, Any], names: tuple[str, ...]) -> Any:
    return next((attributes[n] for n in names if attributes.get(n) not in (None, "")), None)


def _whole(value: object) -> int | None:
    """An integer from OTLP's decimal string, or a number; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None
