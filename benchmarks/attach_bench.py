"""How many events per second `sfqtui attach` (the whole dashboard, not only the stream
client) keeps up with: goal 20,000.

A proxy in a process of its own publishes at a set rate (stream_bench.py's publisher:
the real dispatcher, ring and /v1/sfq/events). The dashboard attaches to it headless,
as `sfqtui attach` does, with the screen redrawn as events arrive, for a few seconds.
It keeps up when it shows events at the published rate and ends close to the proxy's
last seq. Also prints the app's peak anonymous memory, which the window bounds.

Usage: python benchmarks/attach_bench.py [--rates 10000 20000 40000] [--seconds 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from memory import TreePeak

from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp

HERE = Path(__file__).resolve().parent


def shown(app: SfqApp) -> int:
    """Events the app has taken in so far (windows included)."""
    table = app.table
    return table.first_seq + len(table)


async def attach(url: str, seconds: float, window: int) -> tuple[float, int]:
    """(events shown per second once live, how far behind the proxy at the end)."""
    app = SfqApp(LiveOpening(url, window=window))
    async with app.run_test(size=(160, 48)) as pilot:
        while app.current.connection != "live" or not len(app.table):
            await pilot.pause(0.01)
        start_events, started = shown(app), time.perf_counter()
        while time.perf_counter() - started < seconds:
            await pilot.pause(0.05)
        rate = (shown(app) - start_events) / (time.perf_counter() - started)
        behind = httpx.get(f"{url}/v1/sfq/state", timeout=60).json()["seq"] + 1 - shown(app)
    return rate, behind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[10_000, 20_000, 40_000])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--window", type=int, default=200_000)
    args = parser.parse_args()
    print(f"{'published/s':>12} {'shown/s':>9} {'behind at end':>14} {'peak MB':>8}")
    for rate in args.rates:
        proc = subprocess.Popen([sys.executable, str(HERE / "stream_bench.py"), "--publish", str(rate)], stdout=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().strip()  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
            with TreePeak(os.getpid()) as memory:
                shown_rate, behind = asyncio.run(attach(url, args.seconds, args.window))
        finally:
            proc.terminate()
            proc.wait(30)
        print(f"{rate:12,.0f} {shown_rate:9,.0f} {behind:14,d} {memory.peak_mb:8,.0f}")


if __name__ == "__main__":
    main()
