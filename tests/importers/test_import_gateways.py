"""`sfqtui import litellm|otel|envoy-ai-gateway`: gateway request logs to traces with measured times.

The fixtures under tests/data/gateways are small files written from each format's
documentation and source; tests/data/gateways/README.md cites where each field is defined.
"""

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.trace.load import load_trace
from sfqtui.trace.write import write_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "gateways"
LITELLM = DATA / "litellm_spend_logs.jsonl"
OTEL = DATA / "otel_genai_export.json"
VLLM = DATA / "vllm_llm_request.jsonl"
ENVOY = DATA / "envoy_ai_gateway_access.log"
ENVOY_OLD = DATA / "envoy_ai_gateway_access_0.5.log"
KEYS = sorted({json.loads(line)["api_key"] for line in LITELLM.read_text().splitlines()})


def run(cli: CliRunner, *args: object) -> tuple[int, str, str]:
    result = cli.invoke(app, [*map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def imported(cli: CliRunner, tmp_path: Path, fmt: str, *args: object) -> tuple[pl.DataFrame, str]:
    out = tmp_path / f"{fmt}.parquet"
    code, stdout, stderr = run(cli, "import", fmt, *args, "-o", out)
    assert code == 0, stderr
    return pl.read_parquet(out), stdout


# LiteLLM


@pytest.mark.parametrize("source", ["litellm_spend_logs.jsonl", "litellm_spend_logs.json", "litellm_spend_logs.csv"])
def test_litellm_spend_logs_as_json_lines_array_or_csv(source: str, tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "litellm", DATA / source, "--user-from", "team_id")
    assert trace["request_id"].to_list() == ["chatcmpl-001", "chatcmpl-002", "chatcmpl-003", "chatcmpl-004", "chatcmpl-006", "chatcmpl-007"]
    # startTime with Z, without a zone, with +00:00 and +02:00 (09:00:01.5 UTC): all on one clock
    assert trace["arrival_s"].to_list() == [0.0, 0.5, 1.0, 1.5, 3.0, 4.0]
    # endTime - startTime; 0 ms is kept as 1 ms (service_s must be > 0)
    assert trace["service_s"].to_list() == pytest.approx([2.4, 0.75, 3.0, 0.4, 2.5, 0.001])
    # completionStartTime - startTime: streamed, not streamed (= endTime), none for the embedding
    assert trace["ttft_s"].to_list() == pytest.approx([0.35, 0.75, 0.2, None, 0.6, 0.0], nan_ok=True)
    assert trace["input_tokens"].to_list() == [812, 230, 1500, 64, 2048, 12]
    assert trace["output_tokens"].to_list() == [96, 41, 300, 0, 512, 1]
    assert trace["user"].to_list() == ["team-search", "team-support", "team-search", "(none)", "team-support", "team-search"]
    assert trace["model"].to_list() == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini", "text-embedding-3-small", "gpt-4o", "gpt-4o-mini"]
    assert stdout.splitlines()[2:] == [
        "read 8 records, kept 6; skipped 1 MCP tool call (no tokens), 1 failed call (status failure; --keep-failed keeps them)",
        "service_s: measured on all 6 requests (1 logged as 0 ms, kept as 1 ms); ttft_s: on 5 of them",
    ]
    assert "(the measured service times)" in stdout.splitlines()[1]


@pytest.mark.parametrize(("field", "users"), [
    ("user", ["u-alice", "u-bob", "u-alice", "(none)", "u-carol", "u-dave"]),
    ("end_user", ["(none)", "customer-17", "(none)", "customer-17", "customer-42", "(none)"]),
])
def test_litellm_users_from_a_named_field(field: str, users: list[str], tmp_path: Path, cli: CliRunner) -> None:
    trace, _ = imported(cli, tmp_path, "litellm", LITELLM, "--user-from", field)
    assert trace["user"].to_list() == users


def test_litellm_keys_are_named_by_a_digest_and_never_written_or_shown(tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "litellm", LITELLM)  # api_key is the default
    names = trace["user"].to_list()
    assert len(set(names)) == 3 and all(name.startswith("key-") and len(name) == 14 for name in names)
    assert names[0] == names[2] == names[5] and names[1] == names[4]
    written = (tmp_path / "litellm.parquet").read_bytes()
    for key in KEYS:
        assert key.encode() not in written and key[:10] not in stdout and key[:10] not in "".join(names)


def test_litellm_keeps_failed_calls_when_asked(tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "litellm", LITELLM, "--keep-failed")
    assert "chatcmpl-005" in trace["request_id"].to_list() and trace.height == 7
    assert "skipped 1 MCP tool call (no tokens)\n" in stdout


def edited(tmp_path: Path, line: int, **fields: object) -> Path:
    """The LiteLLM fixture with some fields of one line (1-based) changed."""
    lines = LITELLM.read_text().splitlines()
    record = json.loads(lines[line - 1])
    record.update(fields)
    lines[line - 1] = json.dumps(record)
    path = tmp_path / "spend.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("fields", "message"), [
    ({"startTime": "yesterday noon"}, "line 3: startTime 'yesterday noon' is not a time"),
    ({"startTime": ""}, "line 3: startTime is missing"),
    ({"prompt_tokens": "12.5"}, "line 3: prompt_tokens '12.5' is not a whole number >= 0"),
    ({"completion_tokens": -4}, "line 3: completion_tokens '-4' is not a whole number >= 0"),
    ({"endTime": "2025-06-02T08:59:59Z"}, "line 3: endTime '2025-06-02T08:59:59Z' is before startTime"),
    ({"endTime": None, "request_duration_ms": None}, "line 3: endTime is missing, and so is request_duration_ms"),
    ({"completionStartTime": "2025-06-02T09:00:09Z"}, "line 3: completionStartTime '2025-06-02T09:00:09Z' is not between startTime and endTime"),
])
def test_litellm_errors_name_the_line_and_field(fields: dict[str, object], message: str, tmp_path: Path, cli: CliRunner) -> None:
    code, _, stderr = run(cli, "import", "litellm", edited(tmp_path, 3, **fields), "-o", tmp_path / "t.parquet")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert stderr.startswith("sfqtui: error: ") and message in stderr
    assert not any(key[:10] in stderr for key in KEYS)


def test_litellm_duration_when_end_time_is_missing(tmp_path: Path, cli: CliRunner) -> None:
    trace, _ = imported(cli, tmp_path, "litellm", edited(tmp_path, 2, endTime="", request_duration_ms=1250))
    assert trace.filter(pl.col("request_id") == "chatcmpl-002")["service_s"].item() == 1.25


def test_litellm_refuses_other_user_fields_and_the_same_log_twice(tmp_path: Path, cli: CliRunner) -> None:
    code, _, stderr = run(cli, "import", "litellm", LITELLM, "-o", tmp_path / "t.parquet", "--user-from", "metadata")
    assert code == 2 and "--user-from 'metadata': a LiteLLM spend log names its users by api_key, user, team_id, end_user" in stderr
    copy = shutil.copy(LITELLM, tmp_path / "again.jsonl")
    code, _, stderr = run(cli, "import", "litellm", LITELLM, copy, "-o", tmp_path / "t.parquet")
    assert code == 2 and "request id 'chatcmpl-001' appears twice (litellm_spend_logs.jsonl line 1 and again.jsonl line 1)" in stderr


def test_trace_options_are_refused_for_gateway_logs(tmp_path: Path, cli: CliRunner) -> None:
    code, _, stderr = run(cli, "import", "litellm", LITELLM, "-o", tmp_path / "t.parquet", "--users", "4", "--jitter", "2")
    assert code == 2 and "--users, --jitter: not read from a gateway log" in stderr


# OpenTelemetry


def test_otel_one_row_per_model_call(tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "otel", OTEL)
    # the agent span (b7ad...) is a wrapper of its two calls; ae9a... failed; the HTTP span has no usage
    assert trace["request_id"].to_list() == ["53995c3f42cd8ad8", "00f067aa0ba902b7", "e457b5a2e4d86bd1", "1a2b3c4d5e6f7081", "c1d2e3f4a5b6c7d8"]
    assert trace["arrival_s"].to_list() == pytest.approx([0.0, 4.1, 5.9, 8.9, 98.8])
    assert trace["service_s"].to_list() == pytest.approx([2.4, 1.6, 1.9, 2.5, 4.7])
    assert trace["input_tokens"].to_list() == [812, 1000, 2000, 77, 1024]  # the last two: gen_ai.usage.prompt_tokens
    assert trace["output_tokens"].to_list() == [96, 150, 250, 12, 200]
    assert trace["max_tokens"].to_list() == [256, None, None, None, None]
    assert trace["model"].to_list() == ["gpt-4o-mini", "gpt-4o", "gpt-4o", "gpt-4o", "meta-llama/Llama-3.1-8B-Instruct"]
    # user.id on the request's span, enduser.id on the agent's, user.id on the resource, on the span itself
    assert trace["user"].to_list() == ["alice", "bob", "bob", "carol", "dave"]
    assert "ttft_s" not in trace.columns
    assert stdout.splitlines()[2:] == [
        "read 8 records, kept 5; skipped 1 wrapper span (a span inside carries the usage), "
        "1 failed call (status error; --keep-failed keeps them)",
        "service_s: measured on all 5 requests; the log has no time to first token",
    ]


def test_otel_users_from_a_named_attribute(tmp_path: Path, cli: CliRunner) -> None:
    trace, _ = imported(cli, tmp_path, "otel", OTEL, "--user-attr", "tenant.id")
    assert trace["user"].to_list() == ["acme", "globex", "globex", "initech", "(none)"]


def test_otel_keeps_failed_calls_when_asked(tmp_path: Path, cli: CliRunner) -> None:
    trace, _ = imported(cli, tmp_path, "otel", OTEL, "--keep-failed")
    failed = trace.filter(pl.col("request_id") == "ae9a1b2c3d4e5f60")
    assert failed["input_tokens"].item() == 50 and failed["output_tokens"].item() == 0 and failed["user"].item() == "alice"


def test_vllm_spans_give_service_after_the_queue_and_time_to_first_token(tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "otel", VLLM)
    assert trace["arrival_s"].to_list() == pytest.approx([0.0, 0.4])
    # e2e 4.5 s of which 0.5 s in vLLM's queue; ttft 0.62 s from the arrival, 0.12 s from the start of service
    assert trace["service_s"].to_list() == pytest.approx([4.0, 2.0])
    assert trace["ttft_s"].to_list() == pytest.approx([0.12, 0.09])
    assert trace["max_tokens"].to_list() == [512, 512] and trace["input_tokens"].to_list() == [1024, 300]
    assert trace["model"].to_list() == ["meta-llama/Llama-3.1-8B-Instruct"] * 2
    assert "ttft_s: on 2 of them" in stdout


def test_otel_files_read_together_count_a_call_once(tmp_path: Path, cli: CliRunner) -> None:
    """The application's client span and vLLM's span of the same call, in two files: vLLM's is kept, with the client's user."""
    trace, stdout = imported(cli, tmp_path, "otel", OTEL, VLLM)
    assert "c1d2e3f4a5b6c7d8" not in trace["request_id"].to_list() and trace.height == 6
    served = trace.filter(pl.col("request_id") == "3e0c5f2a1b4d6e8f")
    assert served["user"].item() == "dave" and served["service_s"].item() == pytest.approx(4.0)
    assert "skipped 2 wrapper spans" in stdout


def otel_with(tmp_path: Path, key: str, value: dict[str, object]) -> Path:
    document = json.loads(OTEL.read_text())
    span = document["resourceSpans"][0]["scopeSpans"][1]["spans"][0]
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + [{"key": key, "value": value}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("key", "value", "message"), [
    ("gen_ai.usage.input_tokens", {"intValue": "many"}, "gen_ai.usage.input_tokens 'many' is not a whole number >= 0"),
    ("gen_ai.request.max_tokens", {"intValue": "0"}, "gen_ai.request.max_tokens '0' is not a whole number >= 1"),
    ("gen_ai.latency.e2e", {"stringValue": "slow"}, "gen_ai.latency.e2e 'slow' is not a number of seconds"),
])
def test_otel_errors_name_the_span_and_attribute(key: str, value: dict[str, object], message: str, tmp_path: Path, cli: CliRunner) -> None:
    code, _, stderr = run(cli, "import", "otel", otel_with(tmp_path, key, value), "-o", tmp_path / "t.parquet")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert f"resourceSpans[0].scopeSpans[1].spans[0] (span 'chat gpt-4o-mini'): {message}" in stderr


def test_otel_a_call_without_its_times_is_refused(tmp_path: Path, cli: CliRunner) -> None:
    document = json.loads(OTEL.read_text())
    del document["resourceSpans"][0]["scopeSpans"][1]["spans"][0]["startTimeUnixNano"]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document))
    code, _, stderr = run(cli, "import", "otel", path, "-o", tmp_path / "t.parquet")
    assert code == 2 and "spans[0] (span 'chat gpt-4o-mini'): startTimeUnixNano is missing" in stderr


def test_otel_refuses_what_is_not_an_otlp_export(tmp_path: Path, cli: CliRunner) -> None:
    jaeger = tmp_path / "jaeger.json"
    jaeger.write_text(json.dumps({"data": [{"traceID": "abc", "spans": []}]}))
    code, _, stderr = run(cli, "import", "otel", jaeger, "-o", tmp_path / "t.parquet")
    assert code == 2 and "no resourceSpans: not an OTLP/JSON trace export" in stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text(VLLM.read_text().splitlines()[0] + "\n{\"resourceSpans\": [\n")
    code, _, stderr = run(cli, "import", "otel", broken, "-o", tmp_path / "t.parquet")
    assert code == 2 and "broken.jsonl: line 2: not JSON" in stderr


@pytest.mark.parametrize("fmt", ["litellm", "envoy-ai-gateway"])
@pytest.mark.parametrize("export", [OTEL, VLLM], ids=["one document", "one a line"])
def test_an_otel_export_given_to_another_format_says_which_command_reads_it(fmt: str, export: Path, tmp_path: Path, cli: CliRunner) -> None:
    code, _, stderr = run(cli, "import", fmt, export, "-o", tmp_path / "t.parquet")
    assert (code, stderr) == (2, f"sfqtui: error: {export}: this looks like an OTel export (OTLP/JSON resourceSpans), not {fmt} records: "
                                 "use `sfqtui import otel`\n")


# Envoy AI Gateway


def test_envoy_counted_calls_with_users_from_a_logged_header(tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "envoy-ai-gateway", ENVOY, "--user-from", "x-user-id")
    assert trace["request_id"].to_list() == ["envoy_ai_gateway_access:1", "envoy_ai_gateway_access:2", "envoy_ai_gateway_access:4",
                                             "envoy_ai_gateway_access:6"]
    assert trace["arrival_s"].to_list() == [0.0, 0.25, 1.5, 2.75]
    assert trace["service_s"].to_list() == [1.526, 3.21, 0.812, 0.001]  # duration in ms; 0 ms kept as 1 ms
    assert trace["input_tokens"].to_list() == [15, 1200, 420, 3] and trace["output_tokens"].to_list() == [7, 350, 64, 1]
    assert trace["user"].to_list() == ["tenant-a", "tenant-b", "tenant-a", "tenant-c"]
    assert trace["model"].to_list() == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini", "gpt-4o-mini"]
    assert stdout.splitlines()[2] == ("read 6 records, kept 4; skipped 1 failed request (response_code 0 or >= 400; --keep-failed keeps "
                                      "them), 1 line without token counts (MCP calls, routes without llmRequestCosts)")


def test_envoy_names_before_0_6_and_after_share_one_clock(tmp_path: Path, cli: CliRunner) -> None:
    trace, stdout = imported(cli, tmp_path, "envoy-ai-gateway", ENVOY_OLD, ENVOY)
    old = trace.filter(pl.col("source") == ENVOY_OLD.name)
    assert old["input_tokens"].to_list() == [15, 1200] and old["model"].to_list() == ["gpt-4o-mini", "gpt-4o"]
    assert trace["arrival_s"].min() == 0.0 and trace["arrival_s"].max() == 62.75 and trace.height == 6
    assert trace["user"].unique().to_list() == ["all"]
    assert "skipped 2 lines without token counts" in stdout


def test_envoy_errors_name_the_line_and_field(tmp_path: Path, cli: CliRunner) -> None:
    lines = ENVOY.read_text().splitlines()
    record = json.loads(lines[3])
    record.update({"duration": "soon", "gen_ai.usage.output_tokens": "7"})
    path = tmp_path / "access.log"
    path.write_text("\n".join([*lines[:3], json.dumps(record), *lines[4:]]) + "\n")
    code, _, stderr = run(cli, "import", "envoy-ai-gateway", path, "-o", tmp_path / "t.parquet")
    assert code == 2 and "access.log: line 4: duration 'soon' is not a duration in milliseconds >= 0" in stderr
    code, _, stderr = run(cli, "import", "envoy-ai-gateway", ENVOY, "-o", tmp_path / "t.parquet", "--user-from", "x-tenant")
    assert code == 2 and "--user-from 'x-tenant': no line of" in stderr


def test_a_log_with_no_model_calls_is_refused(tmp_path: Path, cli: CliRunner) -> None:
    path = tmp_path / "mcp.log"
    path.write_text(ENVOY.read_text().splitlines()[2] + "\n")
    code, _, stderr = run(cli, "import", "envoy-ai-gateway", path, "-o", tmp_path / "t.parquet")
    assert code == 2 and "no model calls to import" in stderr and "1 line without token counts skipped" in stderr


# Replaying what was imported


IMPORTS = {"litellm": [LITELLM], "otel": [OTEL, VLLM], "envoy-ai-gateway": [ENVOY, ENVOY_OLD]}


@pytest.mark.parametrize("fmt", list(IMPORTS))
def test_imported_traces_replay_on_their_measured_service_times_and_pass_check(fmt: str, tmp_path: Path, cli: CliRunner) -> None:
    trace, _ = imported(cli, tmp_path, fmt, *IMPORTS[fmt])
    log = tmp_path / "log.parquet"
    code, stdout, stderr = run(cli, "simulate", tmp_path / f"{fmt}.parquet", "-o", log, "--slots", "2")
    assert code == 0, stderr
    code, stdout, stderr = run(cli, "check", log)
    assert code == 0 and "no violations" in stdout, stdout + stderr
    events = pl.read_parquet(log)
    held = (events.filter(pl.col("kind") == "dispatch").select("request_id", pl.col("t").alias("start"))
            .join(events.filter(pl.col("kind") == "complete").select("request_id", pl.col("t").alias("end")), on="request_id")
            .join(trace.select("request_id", "service_s"), on="request_id"))
    assert held.height == trace.height
    assert (held["end"] - held["start"]).to_list() == pytest.approx(held["service_s"].to_list())


def test_ttft_s_is_read_by_the_loader_and_ignored_by_the_replay(tmp_path: Path, cli: CliRunner) -> None:
    imported(cli, tmp_path, "otel", VLLM)
    with_ttft = tmp_path / "otel.parquet"
    without = tmp_path / "without.parquet"
    pl.read_parquet(with_ttft).drop("ttft_s").write_parquet(without)
    assert "ttft_s" in pl.read_parquet_schema(with_ttft)
    logs = []
    for trace in (with_ttft, without):
        assert len(load_trace(trace).trace) == 2
        log = tmp_path / f"log-{trace.stem}.parquet"
        assert run(cli, "simulate", trace, "-o", log, "--slots", "1")[0] == 0
        logs.append(pl.read_parquet(log))
    assert logs[0].equals(logs[1])


def test_compare_says_when_the_service_times_are_measured(tmp_path: Path, cli: CliRunner) -> None:
    imported(cli, tmp_path, "litellm", LITELLM)
    measured = tmp_path / "litellm.parquet"
    modelled, unknown, scenario = tmp_path / "modelled.parquet", tmp_path / "unknown.parquet", tmp_path / "scenario.parquet"
    pl.read_parquet(measured).drop("service_s").write_parquet(modelled)
    pl.read_parquet(measured).write_parquet(unknown)  # service_s, but nothing says where it came from
    assert run(cli, "gen", "seed-example", "-o", scenario)[0] == 0  # service_s set by the scenario
    recorded = tmp_path / "recorded.parquet"
    write_trace(pl.read_parquet(unknown), recorded, {"source": "sfqtui proxy"})  # the metadata of a proxy's --record
    line = "waits: replayed on the measured service times (service_s), not modelled ones"
    for trace in (measured, recorded):
        assert line in run(cli, "compare", trace, "--schedulers", "sfq")[1]
    for trace in (modelled, unknown, scenario):
        assert line not in run(cli, "compare", trace, "--schedulers", "sfq")[1]


def test_import_help_shows_an_example_for_each_gateway(cli: CliRunner) -> None:
    shown = " ".join(run(cli, "import", "--help")[1].split())
    for example in ("sfqtui import litellm spend_logs.json", "sfqtui import otel traces.jsonl", "sfqtui import envoy-ai-gateway access.log"):
        assert example in shown
