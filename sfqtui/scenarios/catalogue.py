"""The scenarios of `sfqtui gen`, each tied to the article section it illustrates.

Every generator is deterministic per seed (numpy's PCG64). A static trace cannot wait
for completions, so "closed-loop" users (trickle) are approximated by spacing their
arrivals; each scenario's text says how.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from sfqtui.errors import InputError
from sfqtui.scenarios.frame import backlog, concat, trace_frame, user_names
from sfqtui.scenarios.multi_turn import BLOCK_TOKENS, multi_turn
from sfqtui.scenarios.production import production

Generator = Callable[[np.random.Generator, int | None, int | None], pl.DataFrame]


@dataclass(frozen=True)
class Scenario:
    name: str
    section: str
    summary: str
    slots: int
    build: Generator
    block_tokens: int | None = None  # the tokens of a prompt block, for a scenario with prefix_blocks (semantics §14)


def _poisson_times(rng: np.random.Generator, rate: float, count: int, start: float = 0.0) -> np.ndarray:
    return start + np.cumsum(rng.exponential(1.0 / rate, count))


def seed_example(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    parts = concat(backlog("A", 4, 0.0, 3.0, 3.0), backlog("B", 12, 0.0, 1.0, 1.0))
    return trace_frame(**parts)


def equal(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    names = user_names(users or 2)
    per_user = max(1, (requests or 400) // len(names))
    frames = [(u, _poisson_times(rng, 1.5, per_user)) for u in names]
    user = [u for u, times in frames for _ in times]
    arrival = np.concatenate([times for _, times in frames])
    n = len(user)
    return trace_frame(user, arrival, cost=np.full(n, 100.0), service_s=np.full(n, 1.0))


def heavy_vs_light(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    total = requests or 1100
    light_users = user_names(max(1, (users or 2) - 1), "light")
    heavy_n = max(1, total // 11)
    light_n = max(1, (total - heavy_n) // len(light_users))
    user = ["heavy"] * heavy_n
    arrival = [_poisson_times(rng, 0.4, heavy_n)]
    cost = [np.full(heavy_n, 1000.0)]
    service = [np.full(heavy_n, 10.0)]
    for name in light_users:
        user += [name] * light_n
        arrival.append(_poisson_times(rng, 4.0 / len(light_users), light_n))
        cost.append(np.full(light_n, 100.0))
        service.append(np.full(light_n, 1.0))
    return trace_frame(user, np.concatenate(arrival), cost=np.concatenate(cost), service_s=np.concatenate(service))


def idle_return(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    steady = user_names(max(1, (users or 3) - 1), "steady")
    per_user = max(10, (requests or 600) // len(steady))
    parts = []
    for name in steady:
        times = _poisson_times(rng, 1.5, per_user)
        parts.append({"user": [name] * per_user, "arrival_s": list(times), "cost": [100.0] * per_user, "service_s": [1.0] * per_user})
    horizon = float(min(max(p["arrival_s"]) for p in parts))
    parts.append(backlog("returner", 10, 5.0, 100.0, 1.0))
    parts.append(backlog("returner", 10, round(horizon * 0.6, 3), 100.0, 1.0))
    return trace_frame(**concat(*parts))


def trickle(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    bulk = user_names(max(1, (users or 3) - 1), "bulk")
    per_user = max(10, (requests or 600) // (len(bulk) + 1))
    parts = [backlog(name, per_user, 0.0, 100.0, 1.0) for name in bulk]
    spacing = 2.0
    count = max(5, int(per_user * len(bulk) / (spacing * 1.0) // 2))
    times = [0.5 + spacing * k for k in range(count)]
    parts.append({"user": ["trickle"] * count, "arrival_s": times, "cost": [400.0] * count, "service_s": [1.0] * count})
    return trace_frame(**concat(*parts))


def global_idle(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    names = user_names(users or 3)
    per_user = max(2, (requests or 60) // (2 * len(names)))
    parts = []
    for burst_start in (0.0, 100.0):
        for name in names:
            parts.append(backlog(name, per_user, burst_start, 100.0, 1.0))
    parts.append(backlog(names[0], 1, 0.0, 1000.0, 10.0))
    return trace_frame(**concat(*parts))


def weighted(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    names = user_names(users or 3, "w")
    per_user = max(10, (requests or 600) // len(names))
    parts = []
    weight = []
    for k, name in enumerate(names):
        parts.append(backlog(name, per_user, 0.0, 100.0, 1.0))
        weight += [float(2 ** (k % 3))] * per_user
    return trace_frame(**concat(*parts), weight=weight)


def premium_regular(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    """The shape of ai-dynamo/dynamo#15187: a 4:1 policy between two classes of equal-cost
    512-token requests, all waiting from t = 0; premium sends twice as many, so it is still
    waiting when regular's queue runs dry."""
    total = requests or 600
    premium_n = max(1, total * 2 // 3)
    regular_n = max(1, total - premium_n)
    parts = concat(backlog("premium", premium_n, 0.0, 512.0, 1.0), backlog("regular", regular_n, 0.0, 512.0, 1.0))
    n = premium_n + regular_n
    return trace_frame(**parts, input_tokens=[512] * n, weight=[4.0] * premium_n + [1.0] * regular_n)


def long_short(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    """Two users backlogged from t = 0 with the same number of requests: 'long' sends 2,000-token
    prompts, 'short' 100-token ones, each asking for 50 tokens (priced and served by their tokens)."""
    per_user = max(1, (requests or 800) // 2)
    user = ["long", "short"] * per_user
    n = len(user)
    return trace_frame(user, [0.0] * n, input_tokens=[2000 if u == "long" else 100 for u in user], max_tokens=[50] * n,
                       output_tokens=[50] * n)


def bands(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    """'batch' (priority 0, weight 1) has 200 requests waiting at t = 0; 'interactive' (priority 10,
    weight 4) sends 2.5 a second for 100 s, more than the 2 slots serve. Every request costs 100 and takes 1 s."""
    batch_n = max(1, (requests or 450) * 4 // 9)
    interactive_n = max(1, (requests or 450) - batch_n)
    batch = backlog("batch", batch_n, 0.0, 100.0, 1.0)
    interactive = {"user": ["interactive"] * interactive_n, "arrival_s": list(_poisson_times(rng, 2.5, interactive_n)),
                   "cost": [100.0] * interactive_n, "service_s": [1.0] * interactive_n}
    return trace_frame(**concat(batch, interactive), priority=[0] * batch_n + [10] * interactive_n,
                       weight=[1.0] * batch_n + [4.0] * interactive_n)


def calibration(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    profiles = [("honest", 0.9), ("typical", 0.5), ("padder", 0.08)]
    names = profiles[: max(1, min(users or 3, 3))]
    per_user = max(10, (requests or 900) // len(names))
    user, arrival, inputs, caps, outputs = [], [], [], [], []
    for name, used in names:
        user += [name] * per_user
        arrival.append(_poisson_times(rng, 1.0, per_user))
        inputs.append(np.clip(rng.lognormal(6.0, 0.6, per_user), 16, 8000).astype(np.int64))
        cap = rng.choice(np.array([512, 1024, 2048]), per_user)
        caps.append(cap)
        outputs.append(np.clip(np.round(cap * rng.beta(20 * used, 20 * (1 - used), per_user)), 1, cap).astype(np.int64))
    return trace_frame(
        user,
        np.concatenate(arrival),
        input_tokens=np.concatenate(inputs),
        max_tokens=np.concatenate(caps),
        output_tokens=np.concatenate(outputs),
    )


def demo(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    """Contention, a heavy batch user, an idle user returning and a global idle reset, in ~90 s."""
    rows: dict[str, list] = {"user": [], "arrival_s": [], "input_tokens": [], "output_tokens": []}

    def send(name: str, times: np.ndarray, mean_in: float, mean_out: float) -> None:
        n = len(times)
        rows["user"] += [name] * n
        rows["arrival_s"] += list(np.round(times, 3))
        rows["input_tokens"] += list(np.clip(rng.lognormal(np.log(mean_in), 0.5, n), 8, 16000).astype(int))
        rows["output_tokens"] += list(np.clip(rng.lognormal(np.log(mean_out), 0.5, n), 4, 4000).astype(int))

    for name, rate in (("alice", 0.8), ("bob", 0.6), ("carol", 0.5)):
        times = _poisson_times(rng, rate, 200)
        send(name, times[times < 40.0], 300, 120)
    send("dave-batch", 5.0 + np.sort(rng.uniform(0, 2.0, 30)), 1500, 600)
    send("erin", 2.0 + np.sort(rng.uniform(0, 1.0, 3)), 300, 100)
    send("erin", 28.0 + np.sort(rng.uniform(0, 1.0, 8)), 300, 100)
    for name in ("alice", "bob", "carol", "erin"):
        send(name, 75.0 + np.sort(rng.uniform(0, 8.0, 6)), 300, 120)
    frame = pl.DataFrame(rows).with_columns(
        pl.col("input_tokens").cast(pl.Int64),
        pl.col("output_tokens").cast(pl.Int64),
    )
    frame = frame.with_columns(
        max_tokens=pl.lit(1024, pl.Int64).clip(lower_bound=pl.col("output_tokens")),
        cost=(pl.col("input_tokens") + 2 * pl.col("output_tokens")).cast(pl.Float64),
        service_s=(0.2 + pl.col("input_tokens") / 8000 + pl.col("output_tokens") / 100).round(3),
    )
    return trace_frame(**{c: frame[c].to_numpy() if c != "user" else frame[c].to_list() for c in frame.columns})


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("seed-example", "§2.7", "A costs 3, B costs 1, both backlogged at t=0 (the article's table)", 1, seed_example),
        Scenario("equal", "§7.5 (1)", "equal-cost users, all backlogged: dispatch counts stay within 1", 1, equal),
        Scenario("heavy-vs-light", "§7.5 (2)", "one user's requests cost 10x: it gets about 1/10 the dispatches", 4, heavy_vs_light),
        Scenario("idle-return", "§7.5 (3), §4.3", "a user returns after a long idle: no saved-up priority", 2, idle_return),
        Scenario("trickle", "§2.4, §3.3, §7.5 (4)",
                 "one user sends a request every 2 s (one outstanding if served at once) against backlogged users; shows the loophole under sfq-reset",
                 1, trickle),
        Scenario("global-idle", "§2.5, §7.5 (5)", "two bursts with an idle gap: the second starts everyone at the same v", 1, global_idle),
        Scenario("weighted", "§4.4", "backlogged users with weights 1, 2, 4: shares follow the weights", 1, weighted),
        Scenario("premium-regular", "§8", "a premium user (weight 4) and a regular one (weight 1) with equal 512-token requests, all waiting at t=0: "
                 "4:1 under one SFQ; with --replicas 2 --router hash each lands on a replica of its own (ai-dynamo/dynamo#15187's shape)", 4, premium_regular),
        Scenario("long-short", "§15", "two backlogged users with 2,000- and 100-token prompts: round-robin (llm-d) gives the long one "
                 "most of the tokens, SFQ about half", 4, long_short),
        Scenario("bands", "§15", "a batch user (priority 0, weight 1) waiting while an interactive one (priority 10, weight 4) "
                 "overloads the slots: strict bands starve batch, SFQ with weights gives it a fifth", 2, bands),
        Scenario("calibration", "§5.1, §7.4", "users whose real output is 90%, 50% and 8% of max_tokens (no cost column)", 8, calibration),
        Scenario("production", "§1, §7.1", "hundreds of users, Zipf volumes, bursty arrivals, heavy-tailed tokens; sized for 64 slots", 64, production),
        Scenario("multi-turn", "§14", "chat users resending their history each turn, one-shot users beside them, one system prompt "
                 "for all (prefix_blocks of 64 tokens): what an engine's prefix cache does to costs and placement", 8, multi_turn, BLOCK_TOKENS),
        Scenario("demo", "§2–§3", "the dashboard's demo: contention, a heavy batch user, an idle user returning, a global idle reset", 4, demo),
    )
}


def generate(name: str, seed: int = 0, users: int | None = None, requests: int | None = None) -> pl.DataFrame:
    if name not in SCENARIOS:
        raise InputError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name].build(np.random.default_rng(seed), users, requests)
