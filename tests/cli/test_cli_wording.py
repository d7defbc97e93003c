"""The CLI's words where a count is 1 or a figure rounds to 0, and what a CSV given for a
trace is told to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app


def test_a_csv_given_for_a_trace_is_told_how_to_convert_it(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "requests.csv"
    csv.write_text("t,user,prompt,completion\n0.0,alice,10,5\n1.5,bob,20,8\n")
    for args in (["compare", str(csv)], ["simulate", str(csv), "-o", str(tmp_path / "log.parquet")], ["check", str(csv)]):
        result = cli.invoke(app, args)
        [line] = result.stderr.splitlines()
        assert result.exit_code == 2 and line.startswith(f"sfqtui: error: {csv}: not a readable Parquet file (")
        if args[0] == "check":  # an event log is not converted from a CSV
            assert "sfqtui import" not in line
        else:
            assert line.endswith("; to convert a CSV or JSONL file to a trace, use `sfqtui import csv` or `sfqtui import jsonl`")
    # The command it names is the importer's: it converts this very file.
    converted = cli.invoke(app, ["import", "csv", str(csv), "-o", str(tmp_path / "t.parquet"),
                                 "--map", "arrival_s=t,user=user,input_tokens=prompt,output_tokens=completion"])
    assert converted.exit_code == 0, converted.output


def test_one_user_and_one_slot_read_in_the_singular_and_a_tiny_load_is_not_zero(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "quiet.csv"
    csv.write_text("t,user,prompt,completion\n0,alice,1,1\n5000,alice,1,1\n")
    result = cli.invoke(app, ["import", "csv", str(csv), "-o", str(tmp_path / "t.parquet"),
                              "--map", "arrival_s=t,user=user,input_tokens=prompt,output_tokens=completion"])
    assert result.exit_code == 0, result.output
    wrote, slots = result.stdout.splitlines()
    assert wrote == f"wrote {tmp_path / 't.parquet'}: 2 requests from 1 user, 1 file, 5,000.0 s of arrivals"
    assert slots.startswith("replays use 1 slot unless --slots is given: the trace keeps less than 0.1 slot busy on average")


@pytest.mark.parametrize("users,says", [(1, "from 1 user ("), (3, "users (")])
def test_gen_counts_its_users(users: int, says: str, tmp_path: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["gen", "equal", "-o", str(tmp_path / "t.parquet"), "--users", str(users)])
    assert result.exit_code == 0 and says in result.stdout, result.output
