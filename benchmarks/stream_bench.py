"""How many events per second `EventStream` (the dashboard's client of the live stream) keeps up with.

A proxy runs in a process of its own, with no upstream traffic: a publisher inside it
drives the real dispatcher (arrive, dispatch, idle reset, complete for many users) at a
set rate, so the events go through the ring and /v1/sfq/events exactly as live ones do.
This process follows the stream with EventStream, as `sfqtui attach` does, and counts
what it receives and the CPU time it uses. It keeps up when it receives the rate and
ends close to the proxy's last seq; the CPU time per event bounds what one core could
follow, whatever else the machine is doing.

Usage: python benchmarks/stream_bench.py [--rates 10000 20000 40000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pyarrow as pa

from sfqtui.attach.stream import EventStream

ROOT = Path(__file__).resolve().parents[1]
TICK_S = 0.005
USERS = 50


async def publish(rate: float) -> None:
    """Serve a proxy and feed its dispatcher ``rate`` events a second (about 4 per request)."""
    from sfqtui.proxy.keys import KeyBook
    from sfqtui.proxy.scheduling import Alone
    from sfqtui.proxy.server import ProxyServer, listen_socket
    from sfqtui.proxy.settings import ProxySettings

    users = [f"user{n:02d}" for n in range(USERS)]
    settings = ProxySettings(upstreams=("http://127.0.0.1:9",), slots=8, keys=KeyBook({f"k{u}": u for u in users}, {}), ring_size=100_000)
    server = ProxyServer(settings)
    sock = listen_socket("127.0.0.1", 0)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    scheduling, ring = server.proxy.scheduling, server.proxy.ring
    assert isinstance(scheduling, Alone)  # a lone proxy
    dispatcher = scheduling.dispatcher
    loop = asyncio.get_running_loop()
    started, n = loop.time(), 0
    while not server.should_exit:
        due = int((loop.time() - started) * rate)
        while ring.next_seq < due:
            ticket = dispatcher.arrive(users[n % USERS], 100 + n % 400, 256, None)
            dispatcher.finish(ticket, 64)
            n += 1
        await asyncio.sleep(TICK_S)
    await serving


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def follow(url: str, seconds: float) -> tuple[int, float, int, float]:
    """(events received, seconds, proxy's seq at the end minus the last seq received, CPU seconds used)."""
    stream = EventStream(url)
    received, first = 0, None
    cpu = cpu_seconds()
    threading.Timer(seconds, stream.close).start()
    for item in stream:
        if isinstance(item, pa.Table):
            first = first or time.perf_counter()
            received += item.num_rows
    elapsed = time.perf_counter() - (first or time.perf_counter())
    cpu = cpu_seconds() - cpu
    behind = httpx.get(f"{url}/v1/sfq/state", timeout=60).json()["seq"] - (stream.last_seq or 0)
    return received, elapsed, behind, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[10_000, 20_000, 40_000], help="events per second to publish")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--publish", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.publish:
        asyncio.run(publish(args.publish))
        return
    print(f"{'published/s':>12} {'received/s':>11} {'behind at end':>14} {'client CPU us/event':>20}")
    for rate in args.rates:
        proc = subprocess.Popen([sys.executable, __file__, "--publish", str(rate)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().strip()  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
            received, elapsed, behind, cpu = follow(url, args.seconds)
        finally:
            proc.terminate()
            proc.wait(30)
        print(f"{rate:12,.0f} {received / elapsed:11,.0f} {behind:14,d} {1e6 * cpu / max(1, received):20.1f}")


if __name__ == "__main__":
    main()
