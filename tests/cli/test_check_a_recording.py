"""`sfqtui check` given a trace instead of an event log (a proxy's --record file, the first
thing a new user of the proxy has) says what the file is and the commands that check it; they
work as said."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from tests.proxy_fixtures import ask, running_proxy

TRACES = Path(__file__).resolve().parents[2] / "traces"


def test_a_proxys_recording_is_named_and_the_commands_that_check_it_work(fake, keys_path: Path, tmp_path: Path, cli: CliRunner,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, upstream_url = fake
    record = tmp_path / "traffic.parquet"
    with running_proxy(upstream_url, keys_path, record=record) as px:
        ask(px.url, 4)
    refused = cli.invoke(app, ["check", str(record)])
    assert refused.exit_code == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"sfqtui: error: {record}: a proxy's recording (a trace of the requests it dispatched), not an event log: ")
    commands = re.findall(r"`sfqtui ([^`]+)`", line)
    assert [c.split()[0] for c in commands] == ["simulate", "check"]
    monkeypatch.chdir(tmp_path)  # the log the message names is written where the user is
    for command in commands:
        done = cli.invoke(app, shlex.split(command))
        assert done.exit_code == 0, done.output
    assert "no violations" in done.stdout


def test_a_trace_is_named_as_one(cli: CliRunner) -> None:
    refused = cli.invoke(app, ["check", str(TRACES / "seed-example.parquet")])
    assert refused.exit_code == 2
    assert "seed-example.parquet: a trace (requests, semantics §1), not an event log: `sfqtui simulate " in refused.stderr
