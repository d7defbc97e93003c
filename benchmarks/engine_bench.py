"""How closely the emulated engine (`sfqtui engine`) keeps to its model's time, over HTTP.

The engine runs as `sfqtui engine` in a process of its own; N clients (the official
openai client, one thread each) send one streamed request each at once. The model says
how long the batch takes: every step runs all N (N <= --max-num-seqs), so the last token
comes after the prefill step and ``tokens - 1`` decode steps. Prints the engine's own mean
e2e latency (its /metrics) and the clients' wall time beside the model's.

Usage: python benchmarks/engine_bench.py [--clients 1 6 16] [--tokens 100] [--decode-ms 10]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

from sfqtui.core.engines.model import EngineModel

NAME = "bench"
PROMPT = "x" * 400  # 100 prompt tokens


def mean_e2e(base: str) -> float:
    samples = {s.name: s.value for f in text_string_to_metric_families(httpx.get(f"{base}/metrics").text) for s in f.samples}
    return samples["vllm:e2e_request_latency_seconds_sum"] / samples["vllm:e2e_request_latency_seconds_count"]


def measure(model: EngineModel, clients: int, tokens: int) -> tuple[float, float]:
    """(the engine's mean e2e latency, the clients' wall time) of ``clients`` requests at once."""
    sfqtui = Path(sys.executable).with_name("sfqtui")
    engine = subprocess.Popen([str(sfqtui), "engine", "--port", "0", "--served-model-name", NAME, "--max-num-seqs", str(model.max_num_seqs),
                               "--decode-ms-per-token", str(model.decode_ms_per_token)], stderr=subprocess.PIPE, text=True)
    try:
        assert engine.stderr is not None
        found = re.search(r"http://\S+/v1", engine.stderr.readline())
        assert found is not None, "the engine did not start"
        llm = openai.OpenAI(base_url=found.group(0), api_key="unused", max_retries=0)
        llm.models.list()  # the client's first request loads what it needs; not timed

        def ask() -> None:
            for _ in llm.chat.completions.create(model=NAME, messages=[{"role": "user", "content": PROMPT}], max_tokens=tokens, stream=True):
                pass

        threads = [threading.Thread(target=ask) for _ in range(clients)]
        started = time.monotonic()
        for each in threads:
            each.start()
        for each in threads:
            each.join()
        took = time.monotonic() - started
        return mean_e2e(found.group(0).removesuffix("/v1")), took
    finally:
        engine.terminate()
        engine.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 6, 16])
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--decode-ms", type=float, default=10.0)
    args = parser.parse_args()
    print(f"{'clients':>8} {'model s':>8} {'engine e2e s':>13} {'clients s':>10}")
    for clients in args.clients:
        model = EngineModel(max_num_seqs=max(args.clients), decode_ms_per_token=args.decode_ms)
        predicted = model.step_s(clients, 100 * clients) + (args.tokens - 1) * model.step_s(clients, 0)
        engine_s, clients_s = measure(model, clients, args.tokens)
        print(f"{clients:>8,} {predicted:>8.3f} {engine_s:>13.3f} {clients_s:>10.3f}")


if __name__ == "__main__":
    main()
