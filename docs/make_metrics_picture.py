"""Export docs/img/metrics/group-metrics.svg: the figures of the Grafana dashboard (docs/grafana/sfqtui-proxy.json),
read from the /metrics of two real replicas sharing one SFQ through a real Redis server, while three users send requests.

Each row is one of the dashboard's panels, computed from the scrape as the panel's query would
(the rates since the load began instead of over a 1-minute window; taken when a third of
the requests are answered). Rendered as a terminal table
(rich's SVG export), so no browser is needed.

Usage: python docs/make_metrics_picture.py [OUTPUT_FILE]   (default: docs/img/metrics/group-metrics.svg)
tests/proxy/test_proxy_metrics.py runs it into a temporary folder, so the script keeps working.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fake_upstream import FakeUpstream, fake_server, server_process  # noqa: E402 - the tests' upstream and way of running a server
from tests.redis_server import RedisServer, free_port  # noqa: E402 - the tests' Redis helper

OUT = ROOT / "docs" / "img" / "metrics" / "group-metrics.svg"
TRAFFIC = {"batch-team": (8, 24, 400), "chat-app": (10, 4, 64), "notebook": (6, 6, 96)}  # requests, words, max_tokens


async def _ask(client: httpx.AsyncClient, url: str, user: str, n: int, words: int, cap: int) -> None:
    body = {"model": "m", "stream": n % 2 == 0, "max_tokens": cap,
            "messages": [{"role": "user", "content": " ".join(f"{user}-{n}-{k}" for k in range(words))}]}
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer key-{user}"}) as answer:
        async for _ in answer.aiter_bytes():
            pass


async def scrape(client: httpx.AsyncClient, url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families((await client.get(f"{url}/metrics")).text):
        for sample in family.samples:
            samples[sample.name].append((sample.labels, sample.value))
    return samples


def quantile(buckets: list[tuple[dict[str, str], float]], q: float) -> float | None:
    """histogram_quantile over cumulative bucket counts (le -> count), as Prometheus interpolates."""
    points = sorted((float(labels["le"]), count) for labels, count in buckets)
    total = points[-1][1] if points else 0
    if not total:
        return None
    rank, low, below = q * total, 0.0, 0.0
    for le, count in points:
        if count >= rank:
            return le if le == float("inf") else low + (le - low) * (rank - below) / max(count - below, 1e-12)
        low, below = le, count
    return None


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:,.2f} ms"


def table(replicas: list[str], scraped: list[dict[str, list[tuple[dict[str, str], float]]]], seconds: float) -> Table:
    grid = Table(title="Two replicas sharing one SFQ: the dashboard's figures", title_justify="left")
    grid.add_column("panel")
    for k in range(len(replicas)):
        grid.add_column(f"replica {k}", justify="right")

    def row(name: str, cells: list[str]) -> None:
        grid.add_row(name, *cells)

    def one(samples: dict[str, list[tuple[dict[str, str], float]]], name: str) -> float:
        return samples[name][0][1] if samples.get(name) else 0.0

    row("global bound in force", ["yes" if one(s, "sfqtui_global_bound") == 1 else "no" for s in scraped])
    row("replicas", [f"{one(s, 'sfqtui_replicas'):,.0f}" for s in scraped])
    row("Jain index, waiting users", [f"{one(s, 'sfqtui_jain_index'):.3f}" if s.get("sfqtui_jain_index") else "-" for s in scraped])
    row("group in flight / slots", [f"{one(s, 'sfqtui_inflight'):,.0f} / {one(s, 'sfqtui_slots'):,.0f}" for s in scraped])
    row("group queued", [f"{one(s, 'sfqtui_queued'):,.0f}" for s in scraped])
    for outcome in ("answered", "failed", "cancelled", "refused"):
        row(f"requests/s {outcome}", [f"{sum(v for labels, v in s['sfqtui_requests_total'] if labels['outcome'] == outcome) / seconds:,.2f}"
                                      for s in scraped])
    for user in TRAFFIC:
        row(f"cost/s dispatched: {user}", [f"{sum(v for labels, v in s['sfqtui_dispatched_cost_total'] if labels['user'] == user) / seconds:,.1f}"
                                          for s in scraped])
    row("store round trip p50", [ms(quantile(s["sfqtui_store_seconds_bucket"], 0.5)) for s in scraped])
    row("store round trip p99", [ms(quantile(s["sfqtui_store_seconds_bucket"], 0.99)) for s in scraped])
    row("upstream first byte p50", [ms(quantile(s["sfqtui_upstream_first_byte_seconds_bucket"], 0.5)) for s in scraped])
    row("upstream errors/s", [f"{sum(v for _, v in s.get('sfqtui_upstream_errors_total', [])) / seconds:,.2f}" for s in scraped])
    return grid


async def render(out: Path) -> None:
    store = RedisServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            keys = Path(tmp) / "keys.toml"
            keys.write_text("".join(f'[keys."key-{user}"]\nuser = "{user}"\n' for user in TRAFFIC))
            proxy = [sys.executable, "-m", "sfqtui", "proxy", "--slots", "3", "--keys", str(keys), "--state", store.url]
            with fake_server(FakeUpstream(chunk_delay_s=0.02)) as upstream, \
                    server_process([*proxy, "--upstream", upstream.url, "--listen", f"127.0.0.1:{free_port()}"], ROOT) as first, \
                    server_process([*proxy, "--upstream", upstream.url, "--listen", f"127.0.0.1:{free_port()}"], ROOT) as second:
                replicas = [first, second]
                async with httpx.AsyncClient(timeout=60) as client:  # one for every request: each client builds a TLS context, tens of ms
                    started = time.monotonic()
                    jobs = [asyncio.create_task(_ask(client, replicas[(n + k) % 2], user, n, words, cap))
                            for k, (user, (count, words, cap)) in enumerate(TRAFFIC.items()) for n in range(count)]
                    # Part way: some answered, the rest waiting in their users' queues.
                    while sum(job.done() for job in jobs) < len(jobs) // 3:
                        await asyncio.sleep(0.05)
                    seconds = time.monotonic() - started
                    scraped = [await scrape(client, url) for url in replicas]
                    for job in jobs:  # the answers still to come are not in the picture
                        job.cancel()
                    await asyncio.gather(*jobs, return_exceptions=True)
    finally:
        store.stop()
    console = Console(record=True, width=100, file=open("/dev/null", "w"))
    console.print(table(replicas, scraped, seconds))
    out.parent.mkdir(parents=True, exist_ok=True)
    console.save_svg(str(out), title="sfqtui proxy metrics")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    asyncio.run(render(target))
    print(f"wrote {target}")
