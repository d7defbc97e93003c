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

Usage: python benchmarks/proxy_bench.py [--concurrency 100] [--rounds 5] [--words 16] [--paces 0.1 0.05 0.02] [--client aiohttp|httpx] [--pin]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    args = parser.parse_args()
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
            upstream, upstream_url = start([sys.executable, "tests/fake_upstream.py", "--chunk-delay", str(pace)], on_stderr=False)
            proxy, proxy_url = start([*pin, sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream_url, "--listen", "127.0.0.1:0",
                                      "--slots", str(args.concurrency), "--keys", str(keys)], on_stderr=True)
            try:
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


if __name__ == "__main__":
    main()
