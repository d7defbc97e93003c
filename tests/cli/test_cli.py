"""Each command end to end through the CLI."""

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.scenarios import SCENARIOS


def invoke(cli: CliRunner, *args: str) -> tuple[int, str, str]:
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_done_when_seed_example(tmp_path: Path, cli: CliRunner) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    assert invoke(cli, "gen", "seed-example", "-o", str(trace))[0] == 0
    assert invoke(cli, "simulate", str(trace), "--scheduler", "sfq", "--slots", "1", "-o", str(log))[0] == 0
    rows = pl.read_parquet(log).filter(pl.col("kind") == "dispatch").head(8)
    assert rows["user"].to_list() == list("ABBBABBB")
    assert rows["v"].to_list() == [0, 0, 1, 2, 3, 3, 4, 5]
    assert pl.read_parquet(log).columns[:10] == ["seq", "t", "kind", "scheduler", "request_id", "user", "cost", "v", "meter", "deficit"]


@pytest.mark.parametrize("scenario", sorted(set(SCENARIOS) - {"production"}))
def test_check_passes_every_scenario_sfq_log(scenario: str, tmp_path: Path, cli: CliRunner) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    invoke(cli, "gen", scenario, "-o", str(trace), "--seed", "3")
    assert invoke(cli, "simulate", str(trace), "-o", str(log))[0] == 0
    code, out, _ = invoke(cli, "check", str(log))
    assert code == 0, out
    assert "no violations" in out


def test_check_passes_a_production_log(tmp_path: Path, cli: CliRunner) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    invoke(cli, "gen", "production", "-o", str(trace), "--requests", "20000", "--users", "200")
    assert invoke(cli, "simulate", str(trace), "-o", str(log))[0] == 0
    code, out, _ = invoke(cli, "check", str(log))
    assert code == 0, out


@pytest.fixture
def demo_log(tmp_path: Path, cli: CliRunner) -> Path:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    invoke(cli, "gen", "demo", "-o", str(trace))
    invoke(cli, "simulate", str(trace), "-o", str(log))
    return log


def tamper(log: Path, column: str, row_filter: pl.Expr, new_value: pl.Expr) -> Path:
    df = pl.read_parquet(log)
    target = df.with_row_index("__k").filter(row_filter)["__k"][2]
    df = df.with_columns(pl.when(pl.int_range(pl.len()) == target).then(new_value).otherwise(pl.col(column)).alias(column))
    out = log.with_name("tampered.parquet")
    df.write_parquet(out)
    return out


@pytest.mark.parametrize(
    "column,row_filter,new_value,rule",
    [
        ("meter", pl.col("kind") == "dispatch", pl.col("meter") - 1.0, "§3 charge"),
        ("meter", pl.col("kind") == "arrive", pl.col("meter") + 0.5, "§3 join"),
        ("v", pl.col("kind") == "dispatch", pl.col("v") - 100.0, "§3.1 (1)"),
        ("v", pl.col("kind") == "idle_reset", pl.col("v") + 1.0, "§3 idle reset"),
        ("cost", pl.col("kind") == "dispatch", pl.col("cost") * 2, "§3 charge"),
        ("user", pl.col("kind") == "dispatch", pl.lit("zed"), "§3 pick"),
    ],
)
def test_check_fails_tampered_logs(demo_log: Path, cli: CliRunner, column: str, row_filter: pl.Expr, new_value: pl.Expr, rule: str) -> None:
    bad = tamper(demo_log, column, row_filter, new_value)
    code, out, _ = invoke(cli, "check", str(bad))
    assert code == 1
    assert f"[{rule}]" in out


def test_check_fails_the_sfq_reset_loophole(tmp_path: Path, cli: CliRunner) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    invoke(cli, "gen", "trickle", "-o", str(trace))
    invoke(cli, "simulate", str(trace), "-s", "sfq-reset", "-o", str(log))
    code, out, _ = invoke(cli, "check", str(log))
    assert code == 1 and "[§3.2/§3.3] trickle gained" in out


def test_check_drr_log(tmp_path: Path, cli: CliRunner) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    invoke(cli, "gen", "heavy-vs-light", "-o", str(trace))
    code, out, _ = invoke(cli, "simulate", str(trace), "-s", "drr", "-o", str(log))
    assert code == 0 and "quantum 1,000" in out
    df = pl.read_parquet(log)
    assert (df.filter(pl.col("kind") == "dispatch").select(pl.col("cost") <= pl.col("credit")).to_series().all())
    code, out, _ = invoke(cli, "check", str(log))
    assert code == 0, out


def test_check_refuses_a_trace_given_as_a_log(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "t.parquet"
    invoke(cli, "gen", "equal", "-o", str(trace))
    code, _, err = invoke(cli, "check", str(trace))
    assert code == 2 and "not an event log" in err


def test_compare_json(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "t.parquet"
    invoke(cli, "gen", "heavy-vs-light", "-o", str(trace))
    code, out, _ = invoke(cli, "compare", str(trace), "--schedulers", "sfq,drr,fifo,rr", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data["schedulers"]) == {"sfq", "drr", "fifo", "rr"}
    sfq, rr = data["schedulers"]["sfq"], data["schedulers"]["rr"]
    assert abs(sfq["users"]["heavy"]["share_congested"] - 0.5) < 0.05
    assert rr["users"]["heavy"]["share_congested"] > 0.8
    assert sfq["worst_gap"]["gap"] <= 2 * 1000
    assert sfq["jain"] > 0.99 > rr["jain"]


def test_compare_table(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "t.parquet"
    invoke(cli, "gen", "weighted", "-o", str(trace))
    code, out, _ = invoke(cli, "compare", str(trace), "--schedulers", "sfq,fifo")
    assert code == 0
    assert "sfq: Jain" in out and "fifo: Jain" in out and "share congested" in out


def test_compare_refuses_unknown_scheduler(tmp_path: Path, cli: CliRunner) -> None:
    trace = tmp_path / "t.parquet"
    invoke(cli, "gen", "equal", "-o", str(trace))
    code, _, err = invoke(cli, "compare", str(trace), "--schedulers", "sfq,wfq")
    assert code == 2 and "wfq" in err


def test_gen_is_deterministic_per_seed(tmp_path: Path, cli: CliRunner) -> None:
    a, b, c = (tmp_path / f"{x}.parquet" for x in "abc")
    for path, seed in ((a, "5"), (b, "5"), (c, "6")):
        invoke(cli, "gen", "production", "-o", str(path), "--seed", seed, "--requests", "3000")
    assert pl.read_parquet(a).equals(pl.read_parquet(b))
    assert not pl.read_parquet(a).equals(pl.read_parquet(c))


def test_gen_refuses_unknown_scenario(tmp_path: Path, cli: CliRunner) -> None:
    code, _, err = invoke(cli, "gen", "nope", "-o", str(tmp_path / "x.parquet"))
    assert code == 2 and "unknown scenario" in err


def test_estimator_options_reach_the_log(tmp_path: Path, cli: CliRunner) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    invoke(cli, "gen", "calibration", "-o", str(trace))
    code, _, err = invoke(cli, "simulate", str(trace), "-o", str(log), "--ratio-scope", "user", "--output-weight", "3")
    assert code == 0, err
    from sfqtui.trace.write import read_metadata

    meta = read_metadata(log)
    assert meta["estimator"]["scope"] == "user" and meta["estimator"]["output_weight"] == 3
    dispatched = pl.read_parquet(log).filter(pl.col("kind") == "dispatch")
    assert dispatched["ratio"].null_count() == 0


@pytest.mark.parametrize("command", ["gen", "simulate", "check", "compare"])
def test_help_explains(command: str, cli: CliRunner) -> None:
    code, out, _ = invoke(cli, command, "--help")
    assert code == 0 and "Usage" in out


@pytest.mark.parametrize("command", ["replay", "demo", "serve"])
def test_dashboard_commands_explain_themselves(command: str, cli: CliRunner) -> None:
    code, out, _ = invoke(cli, command, "--help")
    assert code == 0 and "Usage" in out


def test_replay_refuses_a_bad_file_before_opening(tmp_path: Path, cli: CliRunner) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    code, _, err = invoke(cli, "replay", str(bad))
    assert code == 2 and "not a readable Parquet file" in err


def test_serve_answers_a_browser_on_localhost(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("sfqtui")
    server = subprocess.Popen([str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--", "traces/seed-example.parquet"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[2])
    try:
        page = ""
        deadline = time.monotonic() + 60  # generous: the server starts a Python process, slowly on a busy machine
        while not page and time.monotonic() < deadline and server.poll() is None:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
            except OSError:
                time.sleep(0.1)
        assert "sfqtui" in page and "textual" in page.lower()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_reader_that_leaves_early_ends_the_command_quietly() -> None:
    """`sfqtui teach --list | head -1`: no traceback, no bug report, when head has read enough
    (rich's console handles this itself; typer.echo, which teach uses, does not)."""
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("sfqtui")
    root = Path(__file__).resolve().parents[2]
    command = subprocess.Popen([str(exe), "teach", "--list"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root)
    assert command.stdout is not None and command.stderr is not None
    command.stdout.close()  # the reader is gone before the first line
    stderr = command.stderr.read().decode()
    assert command.wait(timeout=60) == 1
    assert "Traceback" not in stderr and "bug" not in stderr, stderr
