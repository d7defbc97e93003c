"""One engine of the engine model in a replay: a FCFS queue in front of a running batch
(docs/engine.md "The model", docs/semantics.md "The engine model in a replay").

Before a step, the heads of its queue join the batch while a place (``max_num_seqs``) and KV
for their whole length (prompt + output) are free; a step runs every request in the batch one
token further and takes ``EngineModel.step_s``; a request finishes at the end of the step that
makes its last token. While the batch stays the same, every step after the first takes the same
time, so a run of steps is kept as the end of its first step and that time (sfqtui.core.engines.pool);
with a context term (``context_us_per_token``) each step is longer than the one before by the
same amount (every running request holds one token more), so the run's step ends are an
arithmetic series: the end of its first step, its second step's time and that growth.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Sequence
from math import ceil, sqrt

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.prefix_cache import PrefixCache
from sfqtui.core.schedulers.base import User

INF = float("inf")

# A request sent to an engine: (request index, user, pool, replica, prompt tokens, output tokens,
# its prompt's blocks when the trace has them (semantics §14), the engine's index), as the replay's
# servers hand it back (sfqtui.core.replay.servers.Served).
Held = tuple[int, User, int, int, int, int, Sequence[int] | None, int]


class ModelledEngine:
    """One engine: its queue, its batch and its current run of steps (see the module's docstring)."""

    def __init__(self, model: EngineModel, index: int) -> None:
        self.index = index
        self.model = model
        self.kv_tokens = model.kv_tokens
        self.queue: deque[Held] = deque()
        # (the step it finishes at, its turn joining, the request), sorted: for a batch of a few places, a list kept in
        # order compares less than a heap for a request that joins and finishes (no sifting down and up again)
        self.batch: list[tuple[int, int, Held]] = []
        self.reserved = 0  # KV reserved by the batch: prompt + output of each running request
        self.outstanding = 0  # sent here and not finished (queued or running): what the balancer counts in flight
        self.joined = 0  # requests that joined the batch so far
        self.steps = 0  # between steps: the steps ended so far (the next step's index)
        self.first = 0  # the index of the current run's first step
        self.first_end = INF  # when the current run's first step ends
        self.step = 0.0  # how long each later step of the run takes (with a context term: its second step)
        self.grow = 0.0  # with a context term: how much longer each step of the run is than the one before
        self.resting = True  # between steps (idle, or a step just ended): settle() starts the next
        self.next_t = INF  # the next step end at which something happens (a request finishes or the head joins)
        self.next_step = -1  # that step's index
        self.touched = False  # sent a request or ended a step since its limit last read it (EngineLimits)
        # EngineModel.step_s by the same floating-point operations, its parts worked out once: a step of n running
        # takes (decode + prefill x P) x slowed[n], and one that prefills nothing decode x slowed[n] (plain[n]).
        self._decode_s, self._prefill_s = model.decode_ms_per_token / 1e3, model.prefill_us_per_token / 1e6
        self._slowed = [1 + model.batch_slowdown * max(0, n - 1) for n in range(model.max_num_seqs + 1)]
        self._plain = [self._decode_s * slowed for slowed in self._slowed]
        # The shape beyond the defaults: the prefill outside the slowdown, and a step's time per token of context held.
        self._context_s, self._slowed_prefill = model.context_us_per_token / 1e6, model.slowed_prefill
        self._shaped = model.shaped
        self.cache: PrefixCache | None = None  # its prefix cache, when the trace has blocks (semantics §14)
        self.cached: dict[int, int] = {}  # the cached prompt tokens of each request that started, until taken
        self.first_token: dict[int, float] = {}  # when each request that started makes its first token, until taken

    @property
    def running(self) -> int:
        return len(self.batch)

    @property
    def waiting(self) -> int:
        return len(self.queue)

    def kv_usage(self, now: float) -> float:
        """KV in use over ``kv_tokens`` at ``now``, as vLLM counts it: each running request's
        prompt once prefilled and the tokens it made so far; a prompt block that several of them
        share counts once, as its cache holds it (semantics §14)."""
        if not self.batch:
            return 0.0
        done = self.steps if self.resting else self.step_at(now, after=False)
        used = 0
        shared: set[int] = set()
        for finish, _turn, held in self.batch:
            made = held[5] - (finish - done + 1)  # the tokens of the steps ended by now
            if made > 0:
                used += held[4] + made
                blocks = held[6]
                if blocks and self.cache is not None:
                    used -= len(blocks) * self.cache.block_tokens
                    shared.update(blocks)
        if shared:
            assert self.cache is not None  # blocks are counted only with a cache
            used += len(shared) * self.cache.block_tokens
        return used / self.kv_tokens

    @staticmethod
    def _admitted(cache: PrefixCache, held: Held) -> int:
        """The cached prompt tokens of a request joining the batch: its longest held prefix, but
        never the whole prompt (the last token is computed again to make the first output, as
        vLLM does, so the hit is whole blocks of at most the prompt less one token)."""
        prompt, size = held[4], cache.block_tokens
        return min(cache.admit(held[6] or (), prompt + held[5]), max(0, prompt - 1) // size) * size

    def end_of(self, s: int) -> float:
        """When step ``s`` of the current run ends."""
        if self.grow:  # the run's steps k = 1, 2, ... after its first take step + grow × (k - 1)
            k = s - self.first
            return self.first_end + k * self.step + self.grow * (k * (k - 1) // 2)
        return self.first_end + (s - self.first) * self.step

    def step_at(self, now: float, after: bool = True) -> int:
        """With ``after``: the first step of the current run that ends at or after ``now`` (the
        one under way); without: the steps of the run ended by ``now`` counted from the first
        step ever (``steps`` as it would be)."""
        if now <= self.first_end:
            s = self.first
        else:
            if self.grow:  # end_of's series solved for now: the positive root of grow/2 k² + (step - grow/2) k = elapsed
                elapsed, half = now - self.first_end, self.step - self.grow / 2
                s = self.first + ceil(2 * elapsed / (half + sqrt(half * half + 2 * self.grow * elapsed)))
            else:
                s = self.first + ceil((now - self.first_end) / self.step)
            while self.end_of(s) < now:  # the estimate's rounding, corrected against end_of itself
                s += 1
            while s > self.first and self.end_of(s - 1) >= now:
                s -= 1
        if after:
            return s
        return s + 1 if self.end_of(s) <= now else s

    def _fits(self, held: Held) -> bool:
        cache = self.cache
        if cache is None:
            return self.model.admits(len(self.batch), self.reserved, held[4] + held[5])
        return len(self.batch) < self.model.max_num_seqs and cache.fits(held[6] or (), held[4] + held[5])

    def starts_at_once(self, blocks: Sequence[int], tokens: int) -> bool:
        """Whether a request of ``tokens`` KV tokens (prompt and output) with prompt ``blocks``
        submitted now joins the batch at once: the engine is between steps (idle, or a step just
        ended), nothing is queued before it, and it has a place and the KV (placement by prefix
        asks it: the engines keep prefix caches)."""
        cache = self.cache
        assert cache is not None
        return self.resting and not self.queue and len(self.batch) < self.model.max_num_seqs and cache.fits(blocks, tokens)

    def submit(self, now: float, held: Held) -> bool:
        """A request sent at ``now`` joins the queue; True when the engine is between steps at
        ``now`` and must settle (it may start the request at once)."""
        queue = self.queue
        queue.append(held)
        if self.resting:
            return True
        if len(queue) > 1 or not self._fits(held):
            return False  # behind another head, or waiting for a place or KV: a finish comes first
        s = self.step_at(now)
        end = self.end_of(s)
        if end == now:  # a step ends right now in which nothing finishes (that would have been handled at now already)
            self.steps = s + 1
            self.resting = True
            self.next_t = INF
            return True
        self.next_step = s
        self.next_t = end
        return False

    def end_step(self) -> list[Held]:
        """Step ``next_step`` ends (at ``next_t``): the requests that finish in it, in the order they joined."""
        s = self.next_step
        batch = self.batch
        finished = []
        while batch and batch[0][0] == s:
            held = batch.pop(0)[2]
            finished.append(held)
            self.reserved -= held[4] + held[5]
            if self.cache is not None:
                self.cache.release(held[6] or (), held[4] + held[5])
        self.outstanding -= len(finished)
        self.steps = s + 1
        self.resting = True
        self.next_t = INF
        return finished

    def settle(self, now: float) -> list[Held]:
        """Between steps at ``now``: the queue's heads join the batch while they fit, and the
        next run of steps starts; the requests that joined, in order."""
        queue, batch, cache = self.queue, self.batch, self.cache
        joined: list[Held] = []
        prefill = 0
        places, kv = self.model.max_num_seqs, self.kv_tokens
        steps, turn, reserved = self.steps, self.joined, self.reserved  # locals, written back once: this runs once a step
        while queue:
            held = queue[0]
            length = held[4] + held[5]
            if cache is None:
                if len(batch) >= places or reserved + length > kv:  # EngineModel.admits, written out
                    break
                prefill += held[4]
            elif len(batch) < places and cache.fits(held[6] or (), length):
                cached = self._admitted(cache, held)
                prefill += held[4] - cached
                self.cached[held[0]] = cached
            else:
                break
            queue.popleft()
            insort(batch, (steps + held[5] - 1, turn, held))
            turn += 1
            reserved += length
            joined.append(held)
        self.joined, self.reserved = turn, reserved
        if not batch:
            self.first_end = INF
            return joined
        n = len(batch)
        self.resting = False
        self.first = self.steps
        if self._shaped:
            self._shaped_run(now, prefill)
        else:
            self.first_end = now + (self._decode_s + self._prefill_s * prefill) * self._slowed[n]
            self.step = self._plain[n]
        if cache is not None:
            for held in joined:
                self.first_token[held[0]] = self.first_end
        self.next_step = s = batch[0][0]
        self.next_t = self.end_of(s) if self.grow else self.first_end + (s - self.first) * self.step  # written out: once a step
        return joined

    def _shaped_run(self, now: float, prefill: int) -> None:
        """A run's times by EngineModel.step_s beyond the defaults: the first step prefills ``prefill``
        tokens, slowed with the decode or not, and every step costs the context the batch holds
        before it, which grows by one token a running request each step."""
        n, steps = len(self.batch), self.steps
        decode = self._plain[n]
        first = (self._decode_s + self._prefill_s * prefill) * self._slowed[n] if self._slowed_prefill else decode + self._prefill_s * prefill
        context = sum(held[4] + held[5] - (finish - steps + 1) for finish, _turn, held in self.batch)  # prompts and tokens made
        self.first_end = now + first + self._context_s * context if self._context_s else now + first
        self.step = decode + self._context_s * (context + n)
        self.grow = self._context_s * n
