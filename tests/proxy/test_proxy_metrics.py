"""/metrics of a group replica: what operators watch, no _created series, and a Grafana dashboard built only from it."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type hints

from sfqtui.proxy.metrics import ProxyMetrics
from tests.fake_upstream import FakeUpstream, fake_server
from tests.proxy_fixtures import KEY_OF, http_get, openai_http, running_group, running_proxy

pytestmark = pytest.mark.xdist_group("test_proxy_metrics")  # one worker starts the module's replica group once

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "sfqtui-proxy.json"
ALERTS = ROOT / "docs" / "grafana" / "alerts.yml"


async def traffic(url: str) -> None:
    """Answered, failed upstream and refused requests."""
    good = openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=KEY_OF["alice"], max_retries=0)
    await asyncio.gather(*(good.completions.create(model="m", prompt=f"hello {n}", max_tokens=4) for n in range(4)))
    with pytest.raises(openai.APIStatusError):
        await good.completions.create(model="m", prompt="[fail500]", max_tokens=4)
    with pytest.raises(openai.AuthenticationError):
        await openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key="sk-nobody", max_retries=0).completions.create(model="m", prompt="x")


def names(text: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


@pytest.fixture(scope="module")
def scraped(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    redis_server.flush()
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    from tests.proxy_fixtures import write_keys

    write_keys(keys)
    with fake_server(FakeUpstream()) as upstream:
        with running_group(upstream.url, keys, redis_server.url, 2, slots=2) as replicas:
            asyncio.run(traffic(replicas[0].url))
            group = http_get(f"{replicas[0].url}/metrics").text
            other = http_get(f"{replicas[1].url}/metrics").text
        with running_proxy(upstream.url, keys) as lone:
            asyncio.run(traffic(lone.url))
            alone = http_get(f"{lone.url}/metrics").text
    return {"group": group, "other": other, "alone": alone}


def test_what_operators_watch_is_exported(scraped: dict[str, str]) -> None:
    text = scraped["group"]
    for outcome in ("answered", "failed", "refused"):
        assert f'outcome="{outcome}"' in text
    assert re.search(r'sfqtui_requests_total\{outcome="refused",user="unknown"\} 1\.0', text)
    assert re.search(r'sfqtui_upstream_errors_total\{code="http_500",upstream="127\.0\.0\.1:\d+"\} 1\.0', text)
    for name in ("sfqtui_upstream_first_byte_seconds_bucket", "sfqtui_inflight", "sfqtui_queued", "sfqtui_jain_index",
                 "sfqtui_store_seconds_bucket", "sfqtui_global_bound", "sfqtui_replicas"):
        assert name in names(text), name
    assert "sfqtui_global_bound 1.0" in text and "sfqtui_replicas 2.0" in text
    assert "sfqtui_global_bound" not in scraped["alone"] and "sfqtui_store_seconds" not in scraped["alone"]
    assert "sfqtui_jain_index" in scraped["alone"]
    for page in scraped.values():
        assert "_created" not in page
        assert not any(key in page for key in KEY_OF.values())


def test_the_grafana_dashboard_queries_only_exported_metrics(scraped: dict[str, str]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    queried = {name for expr in exprs for name in re.findall(r"\bsfqtui_[a-z_]+", expr)}
    exported = names(scraped["group"])
    assert queried <= exported, queried - exported
    assert {"sfqtui_requests_total", "sfqtui_store_seconds_bucket", "sfqtui_upstream_errors_total", "sfqtui_global_bound",
            "sfqtui_jain_index", "sfqtui_upstream_first_byte_seconds_bucket"} <= queried


def test_the_alert_rules_query_only_exported_metrics(scraped: dict[str, str]) -> None:
    rules = [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} == {"SfqtuiBoundSuspended", "SfqtuiReplicaGone", "SfqtuiUpstreamErrors", "SfqtuiQueueGrowing"}
    exported = names(scraped["group"])
    for rule in rules:
        queried = set(re.findall(r"\bsfqtui_[a-z_]+", rule["expr"]))
        assert queried and queried <= exported, (rule["alert"], queried - exported)
        assert rule["alert"] in (ROOT / "docs" / "proxy.md").read_text()  # with what to do when it fires


def test_a_state_without_a_value_leaves_its_gauge_out_and_the_scrape_answers() -> None:
    metrics = ProxyMetrics(5, lambda: {"run": "r", "seq": -1, "scheduler": "sfq", "bound": "suspended", "replicas": 3})
    text = metrics.render().decode()
    assert "sfqtui_global_bound 0.0" in text
    for name in ("sfqtui_virtual_time", "sfqtui_slots", "sfqtui_inflight", "sfqtui_replicas", "sfqtui_jain_index"):
        assert name not in names(text), name


@pytest.mark.long
def test_the_metrics_picture_script_works(tmp_path: Path) -> None:
    out = tmp_path / "group-metrics.svg"
    subprocess.run([sys.executable, str(ROOT / "docs" / "make_metrics_picture.py"), str(out)], check=True, capture_output=True, timeout=120)
    text = out.read_text().replace("&#160;", " ")
    assert "global bound in force" in text and "replica 1" in text
    assert (ROOT / "docs" / "img" / "metrics" / "group-metrics.svg").exists()
