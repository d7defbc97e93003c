"""How faithfully a proxy's --record replays: a live run, then ``sfqtui simulate`` of its recording.

A proxy with 2 slots in front of the tests' fake upstream; 4 users (one of weight 2) send
~100 chat completions with the official ``openai`` client: random prompt lengths and
caps, streamed or not, a few milliseconds apart. The decisions the proxy published on
/v1/sfq/events are compared with the replay of its recording, position by position, and
each request's charge with the replay's.

    python benchmarks/recording_bench.py [--requests 105] [--seed 1] [--runs 3] [--pause 0.01]

Run from a checkout (it imports the tests' fake upstream).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path.cwd()))

from tests.fake_upstream import FakeUpstream, fake_server
from tests.proxy_fixtures import read_events, running_proxy
from tests.recording_traffic import send_uneven, write_keys


def live_run(folder: Path, requests: int, seed: int, pause_s: float) -> tuple[list[dict[str, Any]], Path]:
    """The proxy's published events and its recording."""
    record = folder / "record.parquet"
    upstream = FakeUpstream(latency_s=0.005, chunk_delay_s=0.004)
    with fake_server(upstream) as fake, running_proxy(fake.url, write_keys(folder / "keys.toml"), slots=2, record=record) as px:
        asyncio.run(send_uneven([px.url], requests, seed, pause_s))
        events = read_events(px.url)
    return events, record


def replayed(record: Path, folder: Path, *options: str) -> pl.DataFrame:
    from typer.testing import CliRunner

    from sfqtui.cli.app import app

    out = folder / "replay.parquet"
    result = CliRunner().invoke(app, ["simulate", str(record), "-o", str(out), *options])
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return pl.read_parquet(out)


def agreement(events: list[dict[str, Any]], log: pl.DataFrame) -> dict[str, Any]:
    live = [(e["request_id"], e["cost"]) for e in events if e["kind"] == "dispatch"]
    live_t = {e["request_id"]: e["t"] for e in events if e["kind"] == "dispatch"}
    dispatches = log.filter(pl.col("kind") == "dispatch")
    again = list(zip(dispatches["request_id"].to_list(), dispatches["cost"].to_list()))
    apart = max(abs(live_t[rid] - t) for rid, t in zip(dispatches["request_id"], dispatches["t"]))
    same = sum(1 for a, b in zip(live, again) if a[0] == b[0])
    first = next((k for k, (a, b) in enumerate(zip(live, again), start=1) if a[0] != b[0]), None)  # counting dispatches from 1
    charged = dict(again)
    priced = sum(1 for rid, cost in live if charged.get(rid) != cost)
    return {"dispatches": len(live), "same position": same, "first divergence": first, "priced otherwise": priced,
            "dispatch times apart ms": round(apart * 1000, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=105)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.01, help="longest pause between two requests, seconds")
    args = parser.parse_args()
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            events, record = live_run(folder, args.requests, args.seed + run, args.pause)
            print(f"seed {args.seed + run}: {agreement(events, replayed(record, folder))}", flush=True)


if __name__ == "__main__":
    main()
