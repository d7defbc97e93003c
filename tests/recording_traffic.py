"""Uneven traffic through a real proxy with the official ``openai`` client, for the recording's
tests and benchmarks/recording_bench.py: four users (one of weight 2), random prompt lengths
and caps, streamed or not, sent a few milliseconds apart so that requests queue."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai

from tests import proxy_fixtures
from tests.proxy_fixtures import openai_http

# Distinctive, so that searching a file for them means something.
USERS = {"ann": ("sk-rec-ann-0c1f93a7", 2.0), "ben": ("sk-rec-ben-77a2e05d", None), "cat": ("sk-rec-cat-5d9e1b68", None),
         "dan": ("sk-rec-dan-e413c2f0", None)}


def write_keys(path: Path) -> Path:
    """The key file of these users."""
    return proxy_fixtures.write_keys(path, {key: (user, weight) for user, (key, weight) in USERS.items()})


async def send_uneven(urls: Sequence[str], requests: int, seed: int, pause_s: float = 0.01) -> None:
    """``requests`` chat completions, each to one of ``urls`` in turn, a random pause up to ``pause_s`` apart."""
    rng = random.Random(seed)
    clients = {(url, user): openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)
               for url in urls for user, (key, _) in USERS.items()}

    async def one(client: openai.AsyncOpenAI, words: int, cap: int, stream: bool) -> None:
        body: dict[str, Any] = {"model": "m", "max_tokens": cap,
                                "messages": [{"role": "user", "content": " ".join(f"w{k}" for k in range(words))}]}
        if stream:
            async for _ in await client.chat.completions.create(**body, stream=True):
                pass
        else:
            await client.chat.completions.create(**body)

    jobs = []
    for n in range(requests):
        client = clients[urls[n % len(urls)], rng.choice(list(USERS))]
        jobs.append(asyncio.create_task(one(client, rng.randint(1, 80), rng.randint(1, 30), rng.random() < 0.5)))
        await asyncio.sleep(rng.uniform(0.0, pause_s))
    await asyncio.gather(*jobs)
    await asyncio.gather(*(client.close() for client in clients.values()))
