"""Fit the emulator's EngineModel to a real engine's curve, and the per-point error of the emulator running it.

The model (docs/engine.md, "The model") makes a step of n running sequences take
``(decode + prefill × P) × (1 + slowdown × (n − 1))``. Under a closed loop of c clients
sending equal requests (p prompt and m output tokens), the engine runs rounds of
n = min(c, max_num_seqs) requests that join together: a round takes one step with their
prompts and m − 1 decode steps, so the engine answers n requests per round; by Little's law
a request takes c / throughput from its sending to its last token, and its first token
comes m − 1 decode steps before that (its wait in the queue is in it). The fit is the
(decode, slowdown, prefill) that makes these TTFT p50, e2e p50 and throughput closest to the
measured ones in squared log ratio, over all client counts: a grid, then a finer grid around
its best. The prefill takes in what a request costs the server outside the engine's steps
(HTTP, the chat template, tokenizing), the only per-request time the model has.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

# The figures compared point by point, and how the docs name them.
MEASURES = {"throughput_rps": "throughput", "ttft_p50": "TTFT p50", "ttft_p90": "TTFT p90", "e2e_p50": "e2e p50",
            "e2e_p90": "e2e p90", "running_mean": "running", "waiting_mean": "waiting"}
FITTED = ("throughput_rps", "ttft_p50", "e2e_p50")


def predict(decode_s: float, prefill_s: float, slowdown: float, max_num_seqs: int, clients: int, prompt: int, output: int) -> dict[str, float]:
    """Throughput, TTFT and e2e latency of ``clients`` closed-loop clients on the model (lockstep rounds, see above)."""
    n = min(clients, max_num_seqs)
    grow = 1 + slowdown * (n - 1)
    first = (decode_s + prefill_s * prompt * n) * grow
    rest = (output - 1) * decode_s * grow
    throughput = n / (first + rest)
    e2e = clients / throughput
    return {"throughput_rps": throughput, "e2e_p50": e2e, "ttft_p50": e2e - rest}


def _loss(params: tuple[float, float, float], max_num_seqs: int, points: list[dict[str, Any]]) -> float:
    total = 0.0
    for point in points:
        guess = predict(*params, max_num_seqs, point["clients"], point["prompt_tokens"], point["output_tokens"])
        total += sum(math.log(guess[key] / point[key]) ** 2 for key in FITTED)
    return total


def _best(grid: list[tuple[float, float, float]], max_num_seqs: int, points: list[dict[str, Any]]) -> tuple[float, float, float]:
    return min(grid, key=lambda params: _loss(params, max_num_seqs, points))


def _geometric(low: float, high: float, count: int) -> list[float]:
    return [low * (high / low) ** (k / (count - 1)) for k in range(count)]


def fit(points: list[dict[str, Any]], max_num_seqs: int) -> dict[str, Any]:
    """The EngineModel keys (as_dict's) fitted to ``points`` (vllm_load.curve_point's, one per client count)."""
    if len(points) < 3:
        raise ValueError("fitting three parameters needs at least three client counts")
    coarse = list(itertools.product(_geometric(1e-4, 0.2, 30), [0.0, *_geometric(1e-7, 0.05, 25)], [k / 10 for k in range(31)]))
    decode, prefill, slowdown = _best(coarse, max_num_seqs, points)
    fine = list(itertools.product(_geometric(decode / 1.3, decode * 1.3, 15), [0.0, *_geometric(max(prefill, 1e-8) / 2, max(prefill, 1e-7) * 2, 15)],
                                  [max(0.0, slowdown + k / 200) for k in range(-12, 13)]))
    decode, prefill, slowdown = _best(fine, max_num_seqs, points)
    return {"max_num_seqs": max_num_seqs, "decode_ms_per_token": round(decode * 1e3, 4), "batch_slowdown": round(slowdown, 4),
            "prefill_us_per_token": round(prefill * 1e6, 3), "output_tokens": points[0]["output_tokens"]}


def errors(real: list[dict[str, Any]], emulated: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per client count, the emulator's relative error on each measure: (emulated − real) / real; None where real is 0."""
    by_clients = {p["clients"]: p for p in emulated}
    rows = []
    for point in real:
        other = by_clients.get(point["clients"])
        if other is None:
            continue
        row: dict[str, Any] = {"clients": point["clients"]}
        for key in MEASURES:
            row[key] = (other[key] - point[key]) / point[key] if point[key] else None
        rows.append(row)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The median and the largest absolute error of each measure over the points (the gauges left out where real is 0)."""
    out = {}
    for key in MEASURES:
        values = [abs(r[key]) for r in rows if r[key] is not None]
        if values:
            out[f"{key}_median"] = statistics.median(values)
            out[f"{key}_max"] = max(values)
    return out


def markdown(real: list[dict[str, Any]], emulated: list[dict[str, Any]]) -> str:
    """Two Markdown tables by client count: each measure as "vLLM / emulator", then the emulator's error."""
    by_clients = {p["clients"]: p for p in emulated}
    rows = {r["clients"]: r for r in errors(real, emulated)}
    head = "| clients | " + " | ".join(MEASURES.values()) + " |"
    rule = "|" + "---:|" * (1 + len(MEASURES))
    figures, errs = [head, rule], [head, rule]
    for point in real:
        n = point["clients"]
        if n not in by_clients:
            continue
        figures.append(f"| {n:,} | " + " | ".join(f"{point[k]:,.3f} / {by_clients[n][k]:,.3f}" for k in MEASURES) + " |")
        errs.append(f"| {n:,} | " + " | ".join("–" if rows[n][k] is None else f"{rows[n][k] * 100:+.0f}%" for k in MEASURES) + " |")
    return "\n".join(figures) + "\n\n" + "\n".join(errs)
