"""`ProxySettings` checks every option in one place: the CLI's options and a test's settings are refused alike, in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.errors import InputError
from sfqtui.proxy.keys import load_keys
from sfqtui.proxy.settings import ProxySettings
from sfqtui.proxy.urls import base_url


@pytest.mark.parametrize("change, words", [
    ({"upstreams": ()}, "give at least one --upstream URL"),
    ({"upstreams": ("ftp://gpu1",)}, "expected an http:// or https:// URL"),
    ({"upstreams": ("http://gpu1:8000/v1/chat/completions",)}, "that is an endpoint"),
    ({"slots": 0}, "--slots must be >= 1"),
    ({"limit_from": "engine"}, "--limit-from 'engine': expected one of auto, metrics, latency"),
    ({"events_token": "  "}, "--events-token cannot be empty"),
    ({"ring_size": 0}, "--ring: the ring must hold at least 1 event"),
    ({"record": Path("/no/such/folder/x.parquet")}, "--record /no/such/folder/x.parquet: the folder"),
    ({"metrics_users": 0}, "--metrics-users must be >= 1"),
    ({"estimator": EstimatorParams(oracle=True)}, "cannot use the oracle estimator"),
    ({"upstream_timeout_s": 0}, "--upstream-timeout must be > 0"),
    ({"shutdown_grace_s": -1}, "--shutdown-grace must be >= 0"),
    ({"state_url": "redis://127.0.0.1:6390/abc"}, "the database 'abc' is not a number"),
    ({"lease_s": 0}, "--lease and --store-timeout must be > 0"),
    ({"state_url": "redis://127.0.0.1:6390/0", "lease_s": 1.0}, "--store-timeout must be under half of --lease"),
], ids=lambda value: next(iter(value)) if isinstance(value, dict) else None)
def test_each_bad_value_is_refused_by_the_settings_themselves(keys_path: Path, change: dict[str, Any], words: str) -> None:
    options: dict[str, Any] = {"upstreams": ("http://127.0.0.1:9",), "slots": 2, "keys": load_keys(keys_path), **change}
    with pytest.raises(InputError) as refused:
        ProxySettings(**options)
    assert words in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("endpoint, base", [
    ("http://gpu1:8000/v1/chat/completions", "http://gpu1:8000"),
    ("http://gpu1:8000/v1/completions/", "http://gpu1:8000"),
    ("http://gpu1:8000/v1/models", "http://gpu1:8000"),
    ("https://host/prefix/v1/chat/completions", "https://host/prefix"),
    ("http://gpu1:8000/chat/completions", "http://gpu1:8000"),
])
def test_an_endpoint_given_as_upstream_is_refused_with_the_base_url_to_give(endpoint: str, base: str) -> None:
    # Taken as a base, it made every request's path /v1/chat/completions/v1/chat/completions: the upstream's 404, and nothing logged.
    with pytest.raises(InputError) as refused:
        base_url(endpoint)
    assert f"give the server's base URL, e.g. {base} or {base}/v1" in str(refused.value)
    assert base_url(base) == base_url(f"{base}/v1") == base


def test_the_command_refuses_an_endpoint_in_one_line(keys_path: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["proxy", "--upstream", "http://127.0.0.1:9/v1/chat/completions", "--keys", str(keys_path), "--slots", "2",
                              "--listen", "127.0.0.1:0"])
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line == ("sfqtui: error: --upstream 'http://127.0.0.1:9/v1/chat/completions': that is an endpoint; give the server's base URL, "
                    "e.g. http://127.0.0.1:9 or http://127.0.0.1:9/v1 (the proxy adds each request's path, /v1/chat/completions, to it)")


def test_the_command_builds_the_same_settings_a_test_would(keys_path: Path) -> None:
    given = ProxySettings.from_options(upstream=["http://gpu1:8000/v1"], keys=keys_path, slots="auto:8", listen="[::1]:0", ring_size=10)
    assert given.listen == ("::1", 0) and given.limits is not None and given.limits.maximum == 8
    assert given.slots == given.limits.first and given.bases == ["http://gpu1:8000"] and given.ring_size == 10
    assert given.keys.users == load_keys(keys_path).users
