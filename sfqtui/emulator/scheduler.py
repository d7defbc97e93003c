"""The engine's scheduler: continuous batching over a FCFS queue, as a loop of timed steps.

A request waits in the queue until it is at its head and both a place (``max_num_seqs``)
and KV for its whole length (prompt + output tokens) are free (``EngineModel.admits``, the rule
a replay's engines follow too); it then joins the running batch. Admission reserves the whole length, so a running sequence is never preempted (vLLM
would preempt the latest one when KV runs out; the emulator never gets there). Each step
runs every running sequence one token further (the first step of a sequence is its prefill,
which yields its first token) and takes ``EngineModel.step_s`` (with the context the batch
holds before it: each request's prompt and the tokens it made); the loop sleeps until the
step's end and waits on an event while there is nothing to run, never polling.

With a prefix cache (on by default, as in vLLM's V1 engine) a request is admitted when a place
is free and its blocks not held yet and the rest of its length fit beside what the running
requests hold (``PrefixCache.fits``: without shared prompts, the same rule); its prefill
computes only the tokens after its longest held prefix, which, as in vLLM, never covers the
prompt's last token (a hit is whole blocks of at most ``prompt_tokens - 1`` tokens).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.prefix_cache import PrefixCache

# The most lateness a step makes up for by starting the next one early; a loop later than that
# (a stalled process) restarts the timeline instead of running steps back to back to catch up.
CATCH_UP_S = 0.05
ADMISSIONS_KEPT = 1000


class QueueFull(Exception):
    """The queue holds ``max_queued`` requests already."""


class TooLong(Exception):
    """The request needs more KV than the engine has."""


@dataclass(eq=False)
class Sequence:
    """One request in the engine: its size, its progress and its times (loop clock)."""

    number: int
    prompt_tokens: int
    output_tokens: int
    arrived_t: float  # when its HTTP request came (the API server's time before the queue included)
    queued_t: float  # when it joined the engine's queue
    blocks: tuple[int, ...] = ()  # the prompt's chained block hashes (none without a prefix cache)
    cached_tokens: int = 0  # prompt tokens its prefix cache held at admission: its prefill skipped them
    admitted_t: float | None = None
    admitted_unix: float | None = None  # when it joined the batch, in Unix seconds (what the engine reports)
    finished_t: float | None = None
    generated: int = 0
    # The time its steps took by the model: what the engine computed for it, whatever the host's lateness.
    model_s: float = 0.0
    # Tokens generated since the reader last looked, then None once finished.
    tokens: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)
    admitted: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def length(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def held_kv(self) -> int:
        """KV tokens in use now: the prompt once prefilled, and the tokens generated."""
        return self.prompt_tokens + self.generated if self.generated else 0


Finished = Callable[[Sequence], None]


class Scheduler:
    def __init__(self, model: EngineModel, finished: Finished | None = None, block_tokens: int | None = None) -> None:
        """``block_tokens``: the prefix cache's block (None: no prefix cache)."""
        self.model = model
        self.cache = None if block_tokens is None else PrefixCache(model.kv_tokens, block_tokens)
        # vLLM's prefix-cache counters: prompt tokens looked up at admission, and those found held.
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.reserved_kv = 0
        # The numbers of the last sequences to start, in the order they started (FCFS: their arrival order).
        self.admitted_order: deque[int] = deque(maxlen=ADMISSIONS_KEPT)
        self._finished = finished
        self._numbers = itertools.count()
        self._work = asyncio.Event()

    @property
    def used_kv(self) -> int:
        """KV tokens the running requests hold; a prompt block several of them share counts once."""
        if self.cache is None:
            return sum(seq.held_kv for seq in self.running)
        size = self.cache.block_tokens
        prefilled = [seq for seq in self.running if seq.generated]
        shared = {block for seq in prefilled for block in seq.blocks}
        return len(shared) * size + sum(seq.held_kv - len(seq.blocks) * size for seq in prefilled)

    def submit(self, prompt_tokens: int, output_tokens: int, blocks: tuple[int, ...] = (), arrived_t: float | None = None) -> Sequence:
        """Queue a request (that came at ``arrived_t``, loop clock: now if None), or raise QueueFull / TooLong."""
        if prompt_tokens + output_tokens > self.model.kv_tokens:
            raise TooLong(f"this request needs {prompt_tokens + output_tokens:,} tokens of KV ({prompt_tokens:,} of prompt and "
                          f"{output_tokens:,} of output); the engine has {self.model.kv_tokens:,}")
        if self.model.max_queued is not None and len(self.waiting) >= self.model.max_queued:
            raise QueueFull(f"the engine's queue is full ({self.model.max_queued:,} requests waiting)")
        now = asyncio.get_running_loop().time()
        seq = Sequence(next(self._numbers), prompt_tokens, output_tokens, now if arrived_t is None else arrived_t, now, blocks)
        self.waiting.append(seq)
        self._work.set()
        return seq

    def abort(self, seq: Sequence) -> None:
        """Forget a request whose client left (a no-op once it finished)."""
        if seq in self.waiting:
            self.waiting.remove(seq)
        elif seq in self.running:
            self._leave(seq)

    def _leave(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.reserved_kv -= seq.length
        if self.cache is not None:
            self.cache.release(seq.blocks, seq.length)

    def _fits(self, seq: Sequence) -> bool:
        if self.cache is None:
            return self.model.admits(len(self.running), self.reserved_kv, seq.length)
        return len(self.running) < self.model.max_num_seqs and self.cache.fits(seq.blocks, seq.length)

    def _admit(self, now: float) -> int:
        """Move queue heads into the batch while a place and KV are free; the prompt tokens they bring to compute."""
        prefill = 0
        while self.waiting and self._fits(self.waiting[0]):
            seq = self.waiting.popleft()
            if self.cache is not None:
                held = self.cache.admit(seq.blocks, seq.length)
                seq.cached_tokens = min(held, (seq.prompt_tokens - 1) // self.cache.block_tokens) * self.cache.block_tokens
                self.prefix_queries += seq.prompt_tokens
                self.prefix_hits += seq.cached_tokens
            seq.admitted_t, seq.admitted_unix = now, time.time()
            seq.admitted.set()
            self.running.append(seq)
            self.reserved_kv += seq.length
            self.admitted_order.append(seq.number)
            prefill += seq.prompt_tokens - seq.cached_tokens
        return prefill

    async def run(self) -> None:
        """Engine steps until cancelled."""
        loop = asyncio.get_running_loop()
        step_end: float | None = None  # when the last step ended, in the engine's own timeline
        while True:
            now = loop.time()
            prefill = self._admit(now)
            if not self.running:
                step_end = None
                self._work.clear()
                await self._work.wait()
                continue
            batch = list(self.running)
            # Back-to-back steps follow each other on the model's timeline, so the loop's own
            # lateness (waking up, handing out tokens) does not add up over a long answer.
            start = now if step_end is None or now - step_end > CATCH_UP_S else step_end
            # The context the batch holds (each prompt and the tokens made), read only when the model prices it.
            context = sum(seq.prompt_tokens + seq.generated for seq in batch) if self.model.context_us_per_token else 0
            step_s = self.model.step_s(len(batch), prefill, context)
            step_end = start + step_s
            await asyncio.sleep(step_end - now)
            now = loop.time()
            for seq in batch:
                if seq not in self.running:  # aborted during the step
                    continue
                seq.generated += 1
                seq.model_s += step_s
                seq.tokens.put_nowait(1)
                if seq.generated >= seq.output_tokens:
                    seq.finished_t = now
                    self._leave(seq)
                    seq.tokens.put_nowait(None)
                    if self._finished is not None:
                        self._finished(seq)
