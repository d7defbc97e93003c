"""Gateway logs carry what today's policies schedule by (semantics §15): LiteLLM's request priority,
and where a --policy-from key says so, a field or header for the priority, flow and class."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from sfqtui.cli.app import app

GATEWAYS = Path(__file__).resolve().parents[1] / "data" / "gateways"


def imported(cli: CliRunner, fmt: str, source: Path, out: Path, *options: str) -> pl.DataFrame:
    result = cli.invoke(app, ["import", fmt, str(source), "-o", str(out), *options])
    assert result.exit_code == 0, result.output
    return pl.read_parquet(out)


def test_litellm_keeps_its_request_priority_and_a_team_as_flow(tmp_path: Path, cli: CliRunner) -> None:
    rows = json.loads((GATEWAYS / "litellm_spend_logs.json").read_text())
    for k, row in enumerate(rows):
        row["proxy_server_request"] = {"model": "gpt-4o-mini", "priority": k % 3}
    source = tmp_path / "spend.json"
    source.write_text(json.dumps(rows))
    trace = imported(cli, "litellm", source, tmp_path / "t.parquet", "--policy-from", "flow=team_id")
    assert set(trace["priority"].to_list()) <= {0, 1, 2} and trace["priority"].dtype == pl.Int64
    assert trace["flow"].to_list() == [row["team_id"] or None for row in rows if row["status"] == "success" and row.get("prompt_tokens")][: trace.height]


def test_a_log_without_priorities_has_no_priority_column(tmp_path: Path, cli: CliRunner) -> None:
    trace = imported(cli, "litellm", GATEWAYS / "litellm_spend_logs.json", tmp_path / "t.parquet")
    assert "priority" not in trace.columns


def test_envoy_reads_the_fields_a_key_names(tmp_path: Path, cli: CliRunner) -> None:
    lines = [json.loads(line) for line in (GATEWAYS / "envoy_ai_gateway_access.log").read_text().splitlines() if line.strip()]
    for k, line in enumerate(lines):
        line["x-priority"], line["x-class"] = str(10 * (k % 2)), "gold" if k % 2 else "free"
    source = tmp_path / "access.log"
    source.write_text("\n".join(json.dumps(line) for line in lines))
    trace = imported(cli, "envoy-ai-gateway", source, tmp_path / "t.parquet", "--policy-from", "priority=x-priority,class=x-class")
    assert set(trace["priority"].to_list()) <= {0, 10} and set(trace["class"].to_list()) <= {"gold", "free"}


def test_otel_reads_a_recorded_request_header(tmp_path: Path, cli: CliRunner) -> None:
    export = json.loads((GATEWAYS / "otel_genai_export.json").read_text())
    for resource in export["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span.setdefault("attributes", []).append({"key": "http.request.header.x-tenant",
                                                          "value": {"arrayValue": {"values": [{"stringValue": "tenant-a"}]}}})
    source = tmp_path / "export.json"
    source.write_text(json.dumps(export))
    trace = imported(cli, "otel", source, tmp_path / "t.parquet", "--policy-from", "flow=x-tenant")
    assert set(trace["flow"].to_list()) == {"tenant-a"}


def test_a_priority_that_is_not_an_integer_is_refused(tmp_path: Path, cli: CliRunner) -> None:
    rows = json.loads((GATEWAYS / "litellm_spend_logs.json").read_text())
    rows[0]["proxy_server_request"] = {"priority": "urgent"}
    source = tmp_path / "spend.json"
    source.write_text(json.dumps(rows))
    result = cli.invoke(app, ["import", "litellm", str(source), "-o", str(tmp_path / "t.parquet")])
    assert result.exit_code == 2 and "priority 'urgent' is not an integer" in result.stderr, result.output
    result = cli.invoke(app, ["import", "azure", str(source), "-o", str(tmp_path / "t.parquet"), "--policy-from", "priority=p"])
    assert result.exit_code == 2 and "--policy-from reads gateway logs" in result.stderr
