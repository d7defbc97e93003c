"""`sfqtui proxy --state`: a URL that names no Redis database the way docs/replicas.md says
is refused in one line before anything starts (redis-py would raise, or read a database
that is not a number as database 0, another group's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.errors import InputError
from sfqtui.proxy.settings import check_state_url


@pytest.mark.parametrize("url,says", [
    ("http://127.0.0.1:6390/0", "Redis URL must specify one of the following schemes"),
    ("redis://127.0.0.1:6390/abc", "the database 'abc' is not a number"),
    ("redis://127.0.0.1:6390/0/1", "the database '0/1' is not a number"),
    ("redis://127.0.0.1:6390?db=abc", "Invalid value for 'db'"),
    ("redis://127.0.0.1:port/0", "Port could not be cast"),
], ids=["http scheme", "database abc", "two databases", "db query", "port"])
def test_the_proxy_refuses_a_state_url_in_one_line_before_it_starts(url: str, says: str, keys_path: Path, cli: CliRunner) -> None:
    # An upstream and a store that do not exist: the URL must be refused before either is tried.
    result = cli.invoke(app, ["proxy", "--upstream", "http://127.0.0.1:9", "--keys", str(keys_path), "--slots", "2",
                              "--listen", "127.0.0.1:0", "--state", url])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit) and result.stdout == ""  # exited, nothing raised
    [line] = result.stderr.splitlines()
    assert line.startswith("sfqtui: error: --state") and says in line
    assert "redis://HOST:PORT/DB" in line and "Traceback" not in result.stderr


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6390/0", "redis://127.0.0.1:6390/15", "redis://127.0.0.1:6390", "redis://127.0.0.1:6390/",
                                 "rediss://:secret@cache.internal:6380/2", "redis://127.0.0.1:6390?db=3", "unix:///tmp/redis.sock?db=1"])
def test_a_database_by_number_or_none_is_accepted(url: str) -> None:
    check_state_url(url)


def test_the_refusal_never_shows_the_password() -> None:
    with pytest.raises(InputError) as refused:
        check_state_url("redis://:hunter2secret@127.0.0.1:6390/abc")
    assert "hunter2secret" not in str(refused.value) and "***" in str(refused.value)
