"""Fixtures shared by the tests. The tests are a package: the helper modules beside this file
(dashboard, helpers, proxy_fixtures, fake_upstream, tcp_relay, ...) are imported as ``tests.NAME``,
and a test module that uses another's helpers imports it by its package path."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import textual.app
import textual.pilot
from textual.app import App
from textual.notifications import Notify
from typer.testing import CliRunner

from tests.dashboard import KEPT, until_quiet
from tests.fake_upstream import FakeUpstream, fake_server
from tests.proxy_fixtures import write_keys
from tests.redis_server import SERVERS, RedisServer

# Python caches compiled modules, and pytest its rewritten tests, unless PYTHONDONTWRITEBYTECODE
# is set (some machines set it for every process). Then each of the suite's interpreters (the
# workers, and every sfqtui, proxy, audit child and Dask worker the tests start) compiles every
# module it imports again: about 12 s of processor time for a worker's collection alone. The
# tests' processes write and reuse the cache (in __pycache__, which git ignores) whatever it says.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# The store the group tests run on; SFQTUI_TEST_SERVER=redis runs them all on Redis 6.2 instead.
SERVER = os.environ.get("SFQTUI_TEST_SERVER", "valkey")


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


@pytest.fixture(autouse=True)
def kept_notifications(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every app's notifications are kept for the test (dashboard.notifications reads them): a toast
    lasts 3 to 5 s, which a busy machine can spend between a key and the test's look at it."""
    shown = App._on_notify

    def keeping(app: App, event: Notify) -> None:
        app.__dict__.setdefault(KEPT, []).append(event.notification)
        shown(app, event)

    monkeypatch.setattr(App, "_on_notify", keeping)


@pytest.fixture(autouse=True)
def pilot_waits_until_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Pilot's key and pause wait until the app has handled them, not for 20 ms of a quiet processor (dashboard.until_quiet)."""
    monkeypatch.setattr(textual.app, "wait_for_idle", until_quiet)
    monkeypatch.setattr(textual.pilot, "wait_for_idle", until_quiet)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_servers: run on Redis 6.2 (cached scripts) and on Valkey (Functions) alike")
    config.addinivalue_line("markers", "long: takes ten seconds or more alone; collected first (pytest_collection_modifyitems)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked long first, the rest in their order: xdist hands tests out in this
    order, so a long one starts while the short ones fill the other workers, instead of
    running alone at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


# Workers per processor under `-n auto`. A third of the suite's time is spent waiting (on real
# servers, subprocesses, a proxy's answers), not computing: with one worker per core the
# processors sat idle that long (2 cores: 399 s with 2 workers, 339 s with 3, the same tests).
WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: WORKERS_PER_CORE workers per processor this process may run on."""
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked both_servers run once per store; the others on SERVER."""
    if "redis_server" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_servers"):
        metafunc.parametrize("redis_server", SERVERS, indirect=True, scope="module")


@pytest.fixture(scope="module")
def redis_server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    """A real store on loopback for the module: SERVER, or each of SERVERS for a test marked both_servers."""
    server = RedisServer(getattr(request, "param", SERVER)).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def store(redis_server: RedisServer) -> RedisServer:
    """The module's store, emptied (and its statistics reset) for this test."""
    redis_server.flush()
    return redis_server
