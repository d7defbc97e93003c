"""An engine of known parameters run step by step (the emulator's loop, written again), for
the fit's tests: the requests it served, with their measured times."""

from __future__ import annotations

import random
from collections import deque

from sfqtui.core.analysis.engine_fit.lived import Served
from sfqtui.core.engines.model import EngineModel


def engine_run(model: EngineModel, sent: list[tuple[float, int, int]], ttft: bool = False) -> list[Served]:
    """Each request (sent at, prompt tokens, output tokens) through the emulator's loop: the queue's
    heads join at a step's start while a place is free; a step yields a token for every running request.
    With the model's request_overhead_ms, a request joins the queue that long after it was sent."""
    order = sorted(range(len(sent)), key=lambda i: sent[i][0])
    queue: deque[int] = deque()
    running: list[int] = []
    generated = [0] * len(sent)
    first = [0.0] * len(sent)
    end = [0.0] * len(sent)
    t, j = 0.0, 0
    overhead = model.overhead_s  # each request reaches the queue this long after it was sent
    while j < len(order) or queue or running:
        while j < len(order) and sent[order[j]][0] + overhead <= t:
            queue.append(order[j])
            j += 1
        if not running and not queue:
            t = sent[order[j]][0] + overhead
            continue
        prefill = 0
        while queue and len(running) < model.max_num_seqs:
            i = queue.popleft()
            running.append(i)
            prefill += sent[i][1]
        t += model.step_s(len(running), prefill, sum(sent[i][1] + generated[i] for i in running))
        for i in running:
            generated[i] += 1
            if generated[i] == 1:
                first[i] = t
            if generated[i] == sent[i][2]:
                end[i] = t
        running = [i for i in running if generated[i] < sent[i][2]]
    return [Served(at, at, end[i] - at, prompt, output, first[i] - at if ttft else None) for i, (at, prompt, output) in enumerate(sent)]


def varied_load(requests: int, seed: int, longest_prompt: int = 600) -> list[tuple[float, int, int]]:
    """Quiet spells and bursts, so that the batch size ranges from 1 to beyond the places; prompts of
    10 to ``longest_prompt`` tokens (long ones vary the context a batch holds apart from its size)."""
    rng = random.Random(seed)
    sent, t = [], 0.0
    for k in range(requests):
        busy = (k // 40) % 2 == 1
        t += rng.expovariate(30.0 if busy else 2.0)
        sent.append((t, rng.randint(10, longest_prompt), rng.randint(4, 60)))
    return sent
