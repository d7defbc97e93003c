"""A production-like trace: Zipf user volumes, bursty arrivals, heavy-tailed token counts.

Vectorised with numpy so millions of requests take seconds. Sized so that 64 slots under
the default service model run at about 90% load on average, with bursts well above it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sfqtui.scenarios.frame import trace_frame, user_names

MODELS = np.array(["llama-70b", "llama-8b"])
CAPS = np.array([256, 512, 1024, 2048, 4096])


def production(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    n_users = users or 300
    n = requests or 100_000
    names = np.array(user_names(n_users, "tenant"))
    volume = 1.0 / np.arange(1, n_users + 1) ** 1.1
    volume /= volume.sum()

    # A quarter of the requests come in bursts (batch jobs), the rest as background traffic.
    n_burst = n // 4
    n_background = n - n_burst
    burst_sizes = rng.geometric(1 / 50, n_burst // 10 + 1)
    burst_sizes = burst_sizes[np.cumsum(burst_sizes) <= n_burst]
    burst_sizes = np.append(burst_sizes, n_burst - burst_sizes.sum())
    burst_owner = rng.choice(n_users, burst_sizes.size, p=volume)
    burst_of = np.repeat(np.arange(burst_sizes.size), burst_sizes)
    user_idx = np.concatenate([rng.choice(n_users, n_background, p=volume), burst_owner[burst_of]])

    inputs = np.clip(rng.lognormal(6.2, 1.1, n), 1, 32_000).astype(np.int64)
    cap = CAPS[np.minimum(rng.zipf(1.8, n) - 1, CAPS.size - 1)]
    used = rng.beta(2.0, 3.0, n_users)[user_idx]
    outputs = np.clip(np.round(cap * rng.beta(2.0 * used / (1.0 - used) + 0.2, 2.0)), 1, cap).astype(np.int64)
    mean_service = float(np.mean(0.05 + inputs / 4000 + outputs / 40))
    duration = n / (0.9 * 64 / mean_service)

    # Background: Poisson thinned by an hourly wave; bursts: a start time, then 0.2 s gaps.
    background_t = rng.uniform(0.0, duration, 3 * n_background)
    keep = rng.uniform(0.0, 1.0, background_t.size) < (1.0 + 0.6 * np.sin(2 * np.pi * background_t / 3600.0)) / 1.6
    background_t = background_t[keep][:n_background]
    if background_t.size < n_background:
        background_t = np.concatenate([background_t, rng.uniform(0.0, duration, n_background - background_t.size)])
    burst_start = rng.uniform(0.0, duration, burst_sizes.size)
    gaps = np.cumsum(rng.exponential(0.2, n_burst))
    before = np.concatenate([[0.0], gaps])[np.cumsum(burst_sizes) - burst_sizes]
    burst_t = burst_start[burst_of] + gaps - np.repeat(before, burst_sizes)
    arrival = np.round(np.concatenate([background_t, burst_t]), 6)

    model = MODELS[(user_idx % 3 == 0).astype(np.int64)]
    return trace_frame(
        names[user_idx].tolist(),
        arrival,
        input_tokens=inputs,
        max_tokens=cap.astype(np.int64),
        output_tokens=outputs,
        model=model.tolist(),
    )
