"""Fit the emulator's EngineModel to a real engine's curve, and the per-point error of the emulator running it.

The model (docs/engine.md, "The model") makes a step of n running sequences take
``(decode + prefill × P) × (1 + slowdown × (n − 1))``. With n clients at most max_num_seqs,
every request runs in a batch of n, so the time between two of its tokens is a decode step
of n: a straight line in n − 1, whose intercept is decode_ms_per_token and whose slope over
the intercept is batch_slowdown (least squares, statistics.linear_regression). The time to
first token of one client alone is one step with its prompt: what it has beyond the decode
step is the prefill, per prompt token (it takes in the server's HTTP and tokenizing time too,
which is what a user of the emulator wants it to reproduce). Points with more clients than
places only check the fit: their waits come from the queue, which the model has already.
"""

from __future__ import annotations

import statistics
from typing import Any

# The figures compared point by point, and how the docs name them.
MEASURES = {"throughput_rps": "throughput", "ttft_p50": "TTFT p50", "ttft_p90": "TTFT p90", "e2e_p50": "e2e p50",
            "e2e_p90": "e2e p90", "running_mean": "running", "waiting_mean": "waiting"}


def fit(points: list[dict[str, Any]], max_num_seqs: int) -> dict[str, Any]:
    """The EngineModel keys (as_dict's) fitted to ``points`` (vllm_load.curve_point's, one per client count)."""
    batched = sorted((p for p in points if p["clients"] <= max_num_seqs and p["itl_mean"] is not None), key=lambda p: p["clients"])
    if len(batched) < 2:
        raise ValueError(f"fitting needs two client counts of at most {max_num_seqs} (the places), with more than one output token")
    line = statistics.linear_regression([p["clients"] - 1 for p in batched], [p["itl_mean"] for p in batched])
    decode_s = line.intercept
    if decode_s <= 0:
        raise ValueError(f"the time between tokens does not extrapolate to a positive step alone ({decode_s * 1e3:.3f} ms)")
    alone = batched[0]
    prefill_s = max(0.0, alone["ttft_p50"] - decode_s * (1 + line.slope / decode_s * (alone["clients"] - 1))) / alone["prompt_tokens"]
    return {"max_num_seqs": max_num_seqs, "decode_ms_per_token": round(decode_s * 1e3, 4),
            "batch_slowdown": round(max(0.0, line.slope / decode_s), 4), "prefill_us_per_token": round(prefill_s * 1e6, 3),
            "output_tokens": alone["output_tokens"]}


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
