"""`sfqtui import` on the real public traces and on small hand-made fixtures."""

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.trace.load import load_trace

REAL = Path(__file__).resolve().parents[2] / "traces" / "real"  # the public samples kept in the repository (traces/real/README.md)
AZURE = REAL / "azure_llm_2023"
BURST = REAL / "burstgpt"


def run(cli: CliRunner, *args: object) -> tuple[int, str, str]:
    result = cli.invoke(app, ["import", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_azure_2023_code_and_conversation_become_two_tenants(tmp_path: Path, cli: CliRunner) -> None:
    out = tmp_path / "azure.parquet"
    code_csv, conv_csv = AZURE / "AzureLLMInferenceTrace_code.csv", AZURE / "AzureLLMInferenceTrace_conv.csv"
    code, _, err = run(cli, "azure", code_csv, conv_csv, "-o", out)
    assert code == 0, err
    trace = pl.read_parquet(out)
    by_user = {row["user"]: row for row in trace.group_by("user").agg(pl.len(), pl.col("input_tokens").sum(), pl.col("output_tokens").sum()).to_dicts()}
    for name, csv in (("code", code_csv), ("conv", conv_csv)):
        source = pl.read_csv(csv)
        assert by_user[name]["len"] == source.height
        assert by_user[name]["input_tokens"] == source["ContextTokens"].sum()
        assert by_user[name]["output_tokens"] == source["GeneratedTokens"].sum()
    assert trace["arrival_s"].min() == 0.0
    assert set(trace["model"]) == {"code", "conv"}
    # conv starts first (18:15:46.68); code's first request comes 77.3 s later (18:17:03.98)
    first_code = trace.filter(pl.col("user") == "code")["arrival_s"].min()
    assert first_code == pytest.approx(77.29937, abs=1e-6)
    assert len(load_trace(out).trace) == 8819 + 19366


def test_burstgpt_1_drops_failed_rows_unless_kept(tmp_path: Path, cli: CliRunner) -> None:
    dropped, kept = tmp_path / "a.parquet", tmp_path / "b.parquet"
    assert run(cli, "burstgpt", BURST / "BurstGPT_1_first400.csv", "-o", dropped, "--users", "8")[0] == 0
    assert run(cli, "burstgpt", BURST / "BurstGPT_1_first400.csv", "-o", kept, "--keep-failed", "--user-from", "Model")[0] == 0
    assert pl.read_parquet(dropped).height == 383
    kept_frame = pl.read_parquet(kept)
    assert kept_frame.height == 400 and (kept_frame["output_tokens"] == 0).sum() == 17
    assert set(kept_frame["user"]) == {"ChatGPT", "GPT-4"}
    assert kept_frame["arrival_s"].min() == 0.0 and kept_frame["arrival_s"].max() == 37274 - 5
    load_trace(kept)


def test_burstgpt_3_sessions_as_users(tmp_path: Path, cli: CliRunner) -> None:
    out = tmp_path / "b3.parquet"
    code, _, err = run(cli, "burstgpt", BURST / "BurstGPT_3_first400.csv", "-o", out, "--user-from", "Session ID", "--max-tokens", "bucket:256")
    assert code == 0, err
    trace = pl.read_parquet(out)
    source = pl.read_csv(BURST / "BurstGPT_3_first400.csv").filter(pl.col("Response tokens") != 0)
    assert trace.height == source.height == 399
    sessions = source["Session ID"].drop_nulls().n_unique()
    assert trace["user"].n_unique() == sessions + 1  # the API-log rows, which have no session, form one user
    assert trace.filter(pl.col("user") == "API log").height == 6
    assert (trace["max_tokens"] % 256 == 0).all() and (trace["max_tokens"] >= trace["output_tokens"]).all()
    assert trace["input_tokens"].sum() == source["Request tokens"].sum()


def test_files_far_apart_in_time_are_noted_in_one_line(tmp_path: Path, cli: CliRunner) -> None:
    files = [BURST / "BurstGPT_1_first400.csv", BURST / "BurstGPT_3_first400.csv"]  # 225 days apart
    code, out, err = run(cli, "burstgpt", *files, "-o", tmp_path / "t.parquet", "--user-from", "Model")
    assert code == 0 and "19,481,558.0 s of arrivals" in out
    assert err == ("note: the files are far apart in time: their arrivals span 225.5 days, of which 224.6 days lie between files, "
                   "where a replay has nothing to schedule; import one file per trace\n")
    code, _, err = run(cli, "burstgpt", files[0], "-o", tmp_path / "t.parquet", "--user-from", "Model")
    assert code == 0 and err == ""
    code, _, err = run(cli, "azure", *sorted(AZURE.glob("*.csv")), "-o", tmp_path / "t.parquet")  # the same hour
    assert code == 0 and err == ""


def test_burstgpt_columns_are_read_by_name(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "shuffled.csv"
    csv.write_text("Log Type,Response tokens,Model,Timestamp,Request tokens,Total tokens\n"
                   "Conversation log,10,GPT-4,100.5,20,30\nAPI log,0,ChatGPT,101,5,5\nAPI log,7,ChatGPT,103,8,15\n")
    out = tmp_path / "t.parquet"
    assert run(cli, "burstgpt", csv, "-o", out, "--user-from", "Log Type")[0] == 0
    trace = pl.read_parquet(out)
    assert trace["input_tokens"].to_list() == [20, 8] and trace["arrival_s"].to_list() == [0.0, 2.5]


def test_azure_2024_timestamps_with_offsets_and_no_fraction(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "code_2024.csv"
    csv.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n2024-05-10 00:00:00+00:00,10,5\r\n"
                    b"2024-05-10 00:00:01.250000+00:00,20,6\r\n2024-05-10 00:00:02.5+00:00,30,7")
    out = tmp_path / "t.parquet"
    code, _, err = run(cli, "azure", csv, "-o", out)
    assert code == 0, err
    assert pl.read_parquet(out)["arrival_s"].to_list() == [0.0, 1.25, 2.5]


def test_an_unparseable_timestamp_names_file_line_and_value(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.1,1,2\nyesterday noon,3,4\n")
    out = tmp_path / "t.parquet"
    code, _, err = run(cli, "azure", csv, "-o", out)
    assert code == 2 and not out.exists()
    assert err.strip() == f"sfqtui: error: {csv}: line 3: TIMESTAMP 'yesterday noon' is not a time"


@pytest.mark.parametrize("second, says", [
    ('{"t": "noon", "n": 20}', "line 2: t 'noon' is not a time"),  # the arrival column named t, as the trace's own time column is
    ('{"n": 20}', "line 2: t is missing"),
    ('{"t": null, "n": 20}', "line 2: t is missing"),
])
def test_a_bad_jsonl_time_names_the_line_the_field_and_its_value(second: str, says: str, tmp_path: Path, cli: CliRunner) -> None:
    jsonl = tmp_path / "times.jsonl"
    jsonl.write_text('{"t": 1.0, "n": 10}\n' + second + '\n{"t": 3.0, "n": 5}\n')
    code, _, err = run(cli, "jsonl", jsonl, "--map", "arrival_s=t,input_tokens=n", "-o", tmp_path / "t.parquet")
    assert (code, err) == (2, f"sfqtui: error: {jsonl}: {says}\n")


@pytest.mark.parametrize("fmt, options", [("jsonl", ["--map", "arrival_s=timestamp,input_tokens=input_length"]), ("mooncake", [])])
@pytest.mark.parametrize("good_lines", [1, 10_003], ids=["early", "past the lines read for the schema"])
def test_broken_json_lines_name_the_line(fmt: str, options: list[str], good_lines: int, tmp_path: Path, cli: CliRunner) -> None:
    jsonl = tmp_path / "broken.jsonl"
    good = "".join(json.dumps({"timestamp": 1000 + k, "input_length": 10, "output_length": 5}) + "\n" for k in range(good_lines))
    jsonl.write_text(good + '{"timestamp": 2000, "input_length": 20\n')
    code, _, err = run(cli, fmt, jsonl, *options, "-o", tmp_path / "t.parquet")
    assert (code, err) == (2, f"sfqtui: error: {jsonl}: line {good_lines + 1}: not JSON (Expecting ',' delimiter, column 39)\n")


def test_a_bad_token_count_names_file_line_and_value(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,GPT-4,12,3,15,API log\n2,GPT-4,-4,3,-1,API log\n")
    code, _, err = run(cli, "burstgpt", csv, "-o", tmp_path / "t.parquet")
    assert code == 2 and "line 3: Request tokens -4 is not a whole number >= 0" in err


def test_a_stray_space_in_a_header_shows_in_the_error(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "azure.csv"
    csv.write_text("TIMESTAMP,ContextTokens,GeneratedTokens \n2023-11-16 18:15:46.6805900,374,44\n")
    code, _, err = run(cli, "azure", csv, "-o", tmp_path / "t.parquet")
    assert code == 2 and "missing column(s) 'GeneratedTokens'" in err and "'GeneratedTokens '" in err


def test_the_wrong_format_is_refused(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "burst.csv"
    csv.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,GPT-4,12,3,15,API log\n")
    code, _, err = run(cli, "azure", csv, "-o", tmp_path / "t.parquet")
    assert code == 2 and "missing column(s) 'TIMESTAMP', 'ContextTokens', 'GeneratedTokens' for the azure format" in err
    code, _, err = run(cli, "nope", csv, "-o", tmp_path / "t.parquet")
    assert code == 2 and "unknown format" in err
    code, _, err = run(cli, "azure", tmp_path / "missing.csv", "-o", tmp_path / "t.parquet")
    assert code == 2 and "no such file" in err


def mooncake_file(path: Path) -> Path:
    rows = [(1000, 10, 5), (1000, 20, 6), (1000, 30, 7), (3500, 40, 8)]
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": [1, 2]}) for t, i, o in rows) + "\n")
    return path


def test_mooncake_keeps_clumps_or_spreads_them(tmp_path: Path, cli: CliRunner) -> None:
    src = mooncake_file(tmp_path / "trace.jsonl")
    clumped, spread, again = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    assert run(cli, "mooncake", src, "-o", clumped, "--users", "2", "--assign", "round-robin")[0] == 0
    assert pl.read_parquet(clumped)["arrival_s"].to_list() == [0.0, 0.0, 0.0, 2.5]
    assert pl.read_parquet(clumped)["user"].to_list() == ["user-0", "user-1", "user-0", "user-1"]
    for out in (spread, again):
        assert run(cli, "mooncake", src, "-o", out, "--jitter", "0.5", "--seed", "4")[0] == 0
    times = pl.read_parquet(spread)["arrival_s"].to_list()
    assert all(0.0 <= x < 0.5 for x in times[:3]) and len(set(times[:3])) == 3 and 2.5 <= times[3] < 3.0
    assert times == pl.read_parquet(again)["arrival_s"].to_list()


def test_generic_csv_reads_vidur_columns(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "vidur.csv"
    csv.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n10.0,100,20\n10.5,50,5\n12.0,80,9\n")
    out = tmp_path / "t.parquet"
    code, _, err = run(cli, "csv", csv, "-o", out, "--map", "arrival_s=arrived_at,input_tokens=num_prefill_tokens,output_tokens=num_decode_tokens",
                       "--users", "3", "--seed", "1", "--max-tokens", "fixed:16")
    assert code == 0, err
    trace = pl.read_parquet(out)
    assert trace["arrival_s"].to_list() == [0.0, 0.5, 2.0]
    assert trace["max_tokens"].to_list() == [20, 16, 16]  # a cap is never below what was generated
    load_trace(out)


@pytest.mark.parametrize("unit,values,expected", [("ms", [5000, 5250], [0.0, 0.25]), ("us", [1_000_000, 1_500_000], [0.0, 0.5]),
                                                  ("datetime", ["2024-01-01T00:00:00", "2024-01-01T00:00:03.5"], [0.0, 3.5])])
def test_generic_jsonl_time_units(unit: str, values: list[object], expected: list[float], tmp_path: Path, cli: CliRunner) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps({"when": v, "prompt": 5, "who": "a"}) + "\n" for v in values))
    out = tmp_path / "t.parquet"
    code, _, err = run(cli, "jsonl", src, "-o", out, "--map", "arrival_s=when,input_tokens=prompt,user=who", "--time-unit", unit)
    assert code == 0, err
    assert pl.read_parquet(out)["arrival_s"].to_list() == expected


def test_synthetic_zipf_users_are_deterministic_and_skewed(tmp_path: Path, cli: CliRunner) -> None:
    src = tmp_path / "x.csv"
    src.write_text("t,n\n" + "".join(f"{k},{k % 7 + 1}\n" for k in range(3000)))
    a, b, c = (tmp_path / f"{x}.parquet" for x in "abc")
    for out, seed in ((a, 1), (b, 1), (c, 2)):
        assert run(cli, "csv", src, "-o", out, "--map", "arrival_s=t,input_tokens=n", "--users", "10", "--seed", seed)[0] == 0
    users_a = pl.read_parquet(a)["user"]
    assert users_a.to_list() == pl.read_parquet(b)["user"].to_list() != pl.read_parquet(c)["user"].to_list()
    counts = users_a.value_counts(sort=True)
    assert counts["user"][0] == "user-0" and counts["count"][0] > 3 * counts["count"][-1]


def test_options_are_checked(tmp_path: Path, cli: CliRunner) -> None:
    src = mooncake_file(tmp_path / "m.jsonl")
    out = tmp_path / "t.parquet"
    assert "--max-tokens" in run(cli, "mooncake", src, "-o", out, "--max-tokens", "huge")[2]
    assert "not both" in run(cli, "mooncake", src, "-o", out, "--users", "3", "--user-from", "x")[2]
    assert "no such column" in run(cli, "mooncake", src, "-o", out, "--user-from", "tenant")[2]
    assert "NAME=COLUMN" in run(cli, "csv", src, "-o", out, "--map", "arrival_s")[2]


def test_mooncake_keeps_its_full_blocks_as_prefix_blocks(tmp_path: Path, cli: CliRunner) -> None:
    src = tmp_path / "m.jsonl"
    rows = [(0, 1024, [7, 8]), (1000, 1500, [7, 8, 9]), (2000, 511, [10])]  # 1500 tokens: 2 full blocks and a partial one
    src.write_text("".join(json.dumps({"timestamp": t, "input_length": i, "output_length": 5, "hash_ids": h}) + "\n" for t, i, h in rows))
    out = tmp_path / "t.parquet"
    assert run(cli, "mooncake", src, "-o", out)[0] == 0
    loaded = load_trace(out)
    assert loaded.metadata["block_tokens"] == 512
    blocks = loaded.trace.prefix_blocks
    assert blocks is not None and [list(blocks.of(r)) for r in range(3)] == [[7, 8], [7, 8], []]


def test_the_bundled_mooncake_slice_imports_with_its_blocks(tmp_path: Path, cli: CliRunner) -> None:
    out = tmp_path / "t.parquet"
    assert run(cli, "mooncake", REAL / "mooncake" / "conversation_trace_first2000.jsonl", "-o", out, "--users", "16")[0] == 0
    trace = load_trace(out).trace
    assert len(trace) == 2000 and trace.prefix_blocks is not None
    assert all(trace.prefix_blocks.of(r)[:1].tolist() == [0] for r in range(len(trace)) if len(trace.prefix_blocks.of(r)))  # the shared system prompt
