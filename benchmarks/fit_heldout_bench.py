"""Held-out prediction: the engine model fitted on runs at some client counts predicts each request's
end-to-end time in runs at other client counts, which the fit never saw (issue 31 §3).

Each run is a closed loop of C clients (each sends its next chat completion when its last is
answered: prompts of 20 to 400 tokens, 8 to 48 output tokens, random from --seed) for
--duration seconds through `sfqtui proxy --slots 256 --record` (the proxy holds nothing back,
so a request is sent to the engine when it arrives), in front of the engine: by default
`sfqtui engine` on loopback with a known model (--truth-*), or any OpenAI-compatible server
given by --url (a real vLLM or llama.cpp's llama-server; --model names what it serves).

The runs at --fit-clients are fitted together (`sfqtui.core.analysis.engine_fit.fit_engine`,
what `sfqtui fit` runs; the runs laid end to end, far apart, on one clock). Each run at
--predict-clients is then replayed on the fitted model from its recorded arrivals and tokens
alone (`sfqtui simulate --engine-model` does the same), and each request's predicted end to end
(arrival to the end of its answer) is compared with the measured one: |predicted − measured| /
measured, its median and 90th percentile per run and over all held-out runs, against the
targets (on the emulator: median at most 5%, p90 at most 15%; on a real engine: median at most
10%). The fitted-on runs are replayed too, for scale.

Usage: python benchmarks/fit_heldout_bench.py [--fit-clients 2 8] [--predict-clients 1 4 12] [--duration 20]
       python benchmarks/fit_heldout_bench.py --truth-overhead-ms 50        # an emulator with an API server's time
       python benchmarks/fit_heldout_bench.py --url http://127.0.0.1:8000 --model tiny-llama   # a real engine
       python benchmarks/fit_heldout_bench.py ... --recordings runs/   # keep the runs' recordings (and load averages) there
       python benchmarks/fit_heldout_bench.py --refit runs/ [--fit-clients 2 8 --predict-clients 1 4 12]   # fit them again, no engine
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import vllm_servers

from sfqtui.core.analysis.engine_fit.errors import Errors
from sfqtui.core.analysis.engine_fit.fit import EngineFit, fit_engine
from sfqtui.core.analysis.engine_fit.lived import Served
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.events import COMPLETE
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.trace.fit_replay import computed
from sfqtui.trace.served import ServedTrace, served_requests

NAME = "fit-bench"
KEY = "sk-fit-bench"
PROXY_SLOTS = "256"
GAP_S = 60.0  # between fitted runs laid end to end: no request of one overlaps the next
TARGET_MEDIAN, TARGET_P90, TARGET_REAL_MEDIAN = 0.05, 0.15, 0.10
WARM_URL_S = 10.0  # of load on a real engine before the runs


def chat(words: int, max_tokens: int, model: str) -> dict[str, Any]:
    """A chat completion of ``words`` words of 4 characters with their space: one token each to the emulator, and to the tiny
    model's tokenizer (benchmarks/vllm_model.py: 400 words and its chat template are 422 tokens, within vLLM's 1,024),
    exactly ``max_tokens`` out."""
    return {"model": model, "messages": [{"role": "user", "content": " ".join(["the"] * words)}], "max_tokens": max_tokens,
            "ignore_eos": True}


async def closed_loop(url: str, clients: int, duration_s: float, seed: int, model: str) -> int:
    """``clients`` clients sending one request after another to ``url`` for ``duration_s``; the requests answered."""
    answered = 0
    limits = httpx.Limits(max_connections=clients + 2, max_keepalive_connections=clients + 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600, connect=10), limits=limits,
                                 headers={"authorization": f"Bearer {KEY}"}) as client:
        deadline = time.monotonic() + duration_s

        async def work(k: int) -> None:
            nonlocal answered
            rng = random.Random(seed * 1000 + k)
            while time.monotonic() < deadline:
                response = await client.post(f"{url}/v1/chat/completions", json=chat(rng.randint(20, 400), rng.randint(8, 48), model))
                response.raise_for_status()
                answered += 1

        await asyncio.gather(*(work(k) for k in range(clients)))
    return answered


@contextmanager
def engine(args: argparse.Namespace, scratch: Path) -> Iterator[str]:
    """The engine's URL: --url, or `sfqtui engine` serving the truth model, warmed up (its first answers load its code; a
    real engine's warm its caches for the shapes they bring: unwarmed, vLLM's first run, at 2 clients, answered half as many
    requests as the 1-client run after it)."""
    if args.url:
        url = args.url.rstrip("/")
        asyncio.run(closed_loop(url, 4, WARM_URL_S, seed=0, model=args.model))
        yield url
        return
    truth = EngineModel(max_num_seqs=args.truth_places, decode_ms_per_token=args.truth_decode_ms, prefill_us_per_token=args.truth_prefill_us,
                        batch_slowdown=args.truth_slowdown, request_overhead_ms=args.truth_overhead_ms,
                        context_us_per_token=args.truth_context_us, slowed_prefill=not args.truth_unslowed_prefill)
    model_file = scratch / "truth.json"
    model_file.write_text(json.dumps(truth.as_dict()))
    port = vllm_servers.free_port()
    command = [sys.executable, "-m", "sfqtui", "engine", "--port", str(port), "--served-model-name", NAME, "--model-file", str(model_file)]
    with vllm_servers.running(command, None, scratch / "engine.log", "/v1/models", port) as server:
        asyncio.run(closed_loop(server.url, 2, 0.5, seed=0, model=NAME))
        yield server.url


def recorded_run(upstream: str, clients: int, args: argparse.Namespace, scratch: Path, loads: dict[int, list[float]]) -> ServedTrace:
    """One closed-loop run of ``clients`` through a recording proxy of its own: the requests as the recording has them
    (the load average at its end into ``loads``)."""
    keys = scratch / "keys.toml"
    keys.write_text(f'[keys."{KEY}"]\nuser = "bench"\n')
    record = (args.recordings or scratch) / f"run-{clients}.parquet"
    port = vllm_servers.free_port()
    command = [sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream, "--listen", f"127.0.0.1:{port}", "--slots", PROXY_SLOTS,
               "--keys", str(keys), "--record", str(record)]
    with vllm_servers.running(command, None, scratch / f"proxy-{clients}.log", "/metrics", port) as proxy:
        answered = asyncio.run(closed_loop(proxy.url, clients, args.duration, args.seed + clients, args.model))
    loads[clients] = [round(x, 2) for x in os.getloadavg()]
    print(f"  {clients} clients: {answered:,} requests answered in {args.duration:g} s (load average {loads[clients]})", flush=True)
    return served_requests(record)


def end_to_end_errors(run: ServedTrace, model: EngineModel) -> list[float]:
    """Each request's arrival-to-end time replayed on ``model`` from the run's arrivals and tokens (the proxy's slots in
    front), against the measured one: |predicted − measured| / measured, request by request. The trace is replayed as the
    fit counted it (sfqtui fit's replay does the same): each prompt the tokens the engine computed, where the recording
    says what its prefix cache held, and no prompt blocks, so that the model's engine finds no hits of its own (an engine
    without a prefix cache, llama-server with --no-cache-prompt, would otherwise be credited with the bench's shared prompts)."""
    trace = computed(run)
    events = Replay(trace, ReplayConfig(slots=run.slots or len(trace), engine=EngineSettings(model))).run_all()
    end = {req: t for t, kind, req in zip(events.t, events.kind, events.req) if kind == COMPLETE}
    return [abs(end[k] - trace.arrival_s[k] - (r.end_s - r.arrival_s)) / (r.end_s - r.arrival_s) for k, r in zip(run.index, run.served)]


def laid_end_to_end(runs: list[ServedTrace]) -> list[Served]:
    """The runs' requests on one clock, each run GAP_S after the last one's last answer."""
    served: list[Served] = []
    offset = 0.0
    for run in runs:
        first = min(r.arrival_s for r in run.served)
        served += [replace(r, arrival_s=r.arrival_s - first + offset, dispatch_s=r.dispatch_s - first + offset) for r in run.served]
        offset = max(r.end_s for r in served) + GAP_S
    return served


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an OpenAI-compatible engine to measure (default: sfqtui engine with the truth model)")
    parser.add_argument("--model", default=NAME, help="the model name the engine serves")
    parser.add_argument("--fit-clients", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--predict-clients", type=int, nargs="+", default=[1, 4, 12])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of each run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fit-overhead-ms", type=float, help="give the fit this request_overhead_ms (default: fitted)")
    parser.add_argument("--truth-places", type=int, default=4)
    parser.add_argument("--truth-decode-ms", type=float, default=10.0)
    parser.add_argument("--truth-prefill-us", type=float, default=100.0)
    parser.add_argument("--truth-slowdown", type=float, default=0.25)
    parser.add_argument("--truth-overhead-ms", type=float, default=0.0)
    parser.add_argument("--truth-context-us", type=float, default=0.0, help="the truth model's context_us_per_token")
    parser.add_argument("--truth-unslowed-prefill", action="store_true", help="the truth model's prefill outside the slowdown")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--recordings", type=Path, help="keep the runs' recordings in this folder (run-C.parquet, loads.json)")
    parser.add_argument("--plain-shape", action="store_true", help="fit the step's plain shape only (no context term, the prefill "
                        "slowed): the fit before the whole shape, for comparison")
    parser.add_argument("--refit", type=Path, help="fit and predict the runs a --recordings folder kept, without an engine")
    args = parser.parse_args()

    loads: dict[int, list[float]] = {}
    if args.refit:
        kept = json.loads((args.refit / "loads.json").read_text())
        loads = {int(c): v for c, v in kept["loads"].items()}
        args.url = args.url or kept["url"]
        fit_runs = [served_requests(args.refit / f"run-{c}.parquet") for c in args.fit_clients]
        predict_runs = [served_requests(args.refit / f"run-{c}.parquet") for c in args.predict_clients]
    else:
        if args.recordings:
            args.recordings.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="fit-heldout-") as folder, ExitStack() as stack:
            scratch = Path(folder)
            upstream = stack.enter_context(engine(args, scratch))
            print(f"engine {upstream}: runs of {args.duration:g} s", flush=True)
            fit_runs = [recorded_run(upstream, c, args, scratch, loads) for c in args.fit_clients]
            predict_runs = [recorded_run(upstream, c, args, scratch, loads) for c in args.predict_clients]
        if args.recordings:
            (args.recordings / "loads.json").write_text(json.dumps({"url": args.url, "loads": loads}))

    started = time.process_time()
    fitted: EngineFit = fit_engine(laid_end_to_end(fit_runs), overhead_ms=args.fit_overhead_ms, shape=not args.plain_shape)
    fit_cpu_s = time.process_time() - started
    model = fitted.model
    print(f"\nfitted on {args.fit_clients} clients ({fitted.fitted + fitted.held_out:,} requests, {fit_cpu_s:.1f} s CPU): "
          f"max_num_seqs {model.max_num_seqs}, decode {model.decode_ms_per_token:.2f} ms, prefill {model.prefill_us_per_token:.1f} µs, "
          f"slowdown {model.batch_slowdown:.3f}, overhead {model.request_overhead_ms:.1f} ms, context {model.context_us_per_token:.2f} µs, "
          f"prefill {'in' if model.slowed_prefill else 'outside'} the slowdown")
    print(f"the fit's own check on the requests it held out: {'a poor fit: ' + fitted.poor if fitted.poor else 'not poor'}")
    print(f"{'run':<22}{'requests':>10}{'e2e median':>12}{'e2e p90':>10}")
    rows: list[dict[str, Any]] = []
    held_out: list[float] = []
    for kind, clients, run in [*(("fitted on", c, r) for c, r in zip(args.fit_clients, fit_runs)),
                               *(("held out", c, r) for c, r in zip(args.predict_clients, predict_runs))]:
        each = end_to_end_errors(run, model)
        errors = Errors.of(each)
        print(f"{f'{kind}, {clients} clients':<22}{errors.requests:>10,}{pct(errors.median):>12}{pct(errors.p90):>10}")
        rows.append({"kind": kind, "clients": clients, "load_average": loads[clients], **errors.as_dict()})
        if kind == "held out":
            held_out += each
    pooled = Errors.of(held_out)
    target = f"median <= {pct(TARGET_REAL_MEDIAN)}" if args.url else f"median <= {pct(TARGET_MEDIAN)}, p90 <= {pct(TARGET_P90)}"
    print(f"{'held out, all':<22}{pooled.requests:>10,}{pct(pooled.median):>12}{pct(pooled.p90):>10}   (target: {target})")
    if args.fit_overhead_ms is None:  # what fitting the API server's time brings: the same runs fitted without it
        without = fit_engine(laid_end_to_end(fit_runs), overhead_ms=0.0, shape=not args.plain_shape).model
        alone = Errors.of([e for run in predict_runs for e in end_to_end_errors(run, without)])
        print(f"{'held out, no overhead':<22}{alone.requests:>10,}{pct(alone.median):>12}{pct(alone.p90):>10}   "
              f"(fitted with request_overhead_ms 0: decode {without.decode_ms_per_token:.2f} ms, prefill "
              f"{without.prefill_us_per_token:.1f} µs, slowdown {without.batch_slowdown:.3f})")
    if args.json:
        args.json.write_text(json.dumps({"engine": args.url or "sfqtui engine", "model": model.as_dict(), "fit_clients": args.fit_clients,
                                         "runs": rows, "held_out": pooled.as_dict(), "poor_fit": fitted.poor, "duration_s": args.duration,
                                         "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, indent=2) + "\n")


if __name__ == "__main__":
    main()
