"""The multi-turn scenario (semantics §14): chat users whose sessions resend their history each
turn, one-shot users beside them, and a system prompt every request starts with.

A session's prompt is its token stream so far (the system prompt, then each turn's message
and answer), so the stream only grows and its k-th full block never changes: its hash is a
mix of (session, k), and the system prompt's blocks are the same in every prompt. Hashes are
chained as semantics §14 asks: equal hashes at k mean equal prompts through block k.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sfqtui.scenarios.frame import trace_frame, user_names

BLOCK_TOKENS = 64
SYSTEM_BLOCKS = 8  # the shared system prompt: 512 tokens
MAX_TOKENS = 1024
MASK = (1 << 64) - 1


def _block_hash(stream: int, k: int) -> int:
    """The hash of block ``k`` of token stream ``stream`` (0: the system prompt), splitmix64-mixed."""
    z = (stream * 0x9E3779B97F4A7C15 + k + 1) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _blocks(stream: int, tokens: int) -> list[int]:
    """The full blocks of a prompt of ``tokens`` tokens of ``stream`` after the system prompt."""
    full = tokens // BLOCK_TOKENS
    return [_block_hash(0, k) if k < SYSTEM_BLOCKS else _block_hash(stream, k) for k in range(full)]


def multi_turn(rng: np.random.Generator, users: int | None, requests: int | None) -> pl.DataFrame:
    """Half the users chat (sessions of 3 to 10 turns, a few seconds apart), half send one-shot
    prompts at the same rate of requests; about ``requests`` in all (600)."""
    n_users = max(2, users or 6)
    chatters = user_names(n_users // 2, "chat")
    one_shot = user_names(n_users - n_users // 2, "oneshot")
    per_user = max(4, (requests or 600) // n_users)
    system = SYSTEM_BLOCKS * BLOCK_TOKENS
    user: list[str] = []
    arrival: list[float] = []
    inputs: list[int] = []
    outputs: list[int] = []
    blocks: list[list[int]] = []
    stream = 0
    for name in chatters:
        t, sent = float(rng.uniform(0, 2)), 0
        while sent < per_user:
            stream += 1
            history = system
            for _turn in range(min(int(rng.integers(3, 11)), per_user - sent)):
                history += int(np.clip(rng.lognormal(np.log(200), 0.6), 8, 2000))  # the user's new message
                output = int(np.clip(rng.lognormal(np.log(150), 0.6), 4, MAX_TOKENS))
                user.append(name)
                arrival.append(round(t, 3))
                inputs.append(history)
                outputs.append(output)
                blocks.append(_blocks(stream, history))
                history += output  # the answer is resent with the next turn
                t += float(rng.exponential(3.0)) + 1.0
                sent += 1
            t += float(rng.exponential(4.0))
    span = max(arrival) if arrival else 60.0
    for name in one_shot:
        for when in np.sort(rng.uniform(0, span, per_user)):
            stream += 1
            prompt = system + int(np.clip(rng.lognormal(np.log(600), 0.6), 8, 8000))
            user.append(name)
            arrival.append(round(float(when), 3))
            inputs.append(prompt)
            outputs.append(int(np.clip(rng.lognormal(np.log(150), 0.6), 4, MAX_TOKENS)))
            blocks.append(_blocks(stream, prompt))
    return trace_frame(
        user,
        arrival,
        input_tokens=np.array(inputs, dtype=np.int64),
        max_tokens=np.full(len(user), MAX_TOKENS, dtype=np.int64),
        output_tokens=np.array(outputs, dtype=np.int64),
        prefix_blocks=pl.Series(blocks, dtype=pl.List(pl.UInt64)),
    )
