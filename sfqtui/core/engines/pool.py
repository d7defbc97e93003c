"""The engine model in a replay: N engines behind the balancer, each a FCFS queue in front
of a running batch (docs/engine.md "The model", docs/semantics.md "The engine model in a replay").

Each engine runs the emulator's loop on the replay's clock: before a step, the heads of
its queue join the batch while a place (``max_num_seqs``) and KV for their whole length
(prompt + output) are free; a step runs every request in the batch one token further
and takes ``EngineModel.step_s``; a request finishes at the end of the step that makes
its last token. Nothing here reads a clock: times are the replay's.

While the batch stays the same, every step takes the same time ``L``; such a run of
steps is kept as the end of its first step ``e`` and ``L``, the step ``n`` places after
the first ending at exactly ``e + n * L``. A new run starts whenever the batch changes
(a request joins or finishes). So the replay jumps from step to step where something
happens instead of going through every token, and the times are one formula, the same
however the replay got there.

A model with a ``request_overhead_ms`` holds each request that long before it joins its
engine's queue (the API server's time): the engine is chosen when the request is sent, and
counts it in flight from then; as every request takes the same time, they reach their
engines in the order they were sent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from operator import add, attrgetter

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.modelled import INF, Held, ModelledEngine
from sfqtui.core.engines.prefix_cache import PrefixCache
from sfqtui.core.engines.prefix_index import PrefixIndex
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.requests.trace import PrefixBlocks, Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers.base import User
from sfqtui.errors import InputError

_index = attrgetter("index")  # engines in engine order


def request_tokens(trace: Trace, model: EngineModel) -> tuple[list[int], list[int]]:
    """Each request's prompt and output tokens as the engine model runs it.

    Prompt: ``input_tokens`` (0 when unknown). Output: ``output_tokens`` when recorded, else
    ``max_tokens`` (the emulator generates exactly that), else the model's ``output_tokens``;
    at least 1, since a request's first step makes its first token. InputError for a
    request whose prompt and output need more KV than an engine has (the emulator answers 400).
    """
    n = len(trace)
    inputs = trace.input_tokens if trace.input_tokens is not None else [0] * n
    outputs = trace.output_tokens if trace.output_tokens is not None else [-1] * n
    caps = trace.max_tokens if trace.max_tokens is not None else [-1] * n
    default = model.output_tokens
    # The rules below, per request, only where they change something: the columns are whole (none unknown), mostly.
    prompts = list(inputs) if min(inputs, default=0) >= 0 else [p if p > 0 else 0 for p in inputs]
    if min(outputs, default=1) >= 1:
        made = list(outputs)
    else:
        made = [max(1, o if o >= 0 else (c if c >= 0 else default)) for o, c in zip(outputs, caps)]
    kv = model.kv_tokens
    lengths = list(map(add, prompts, made))
    if max(lengths, default=0) > kv:
        r = next(r for r, length in enumerate(lengths) if length > kv)
        raise InputError(f"request {trace.request_id[r]} needs {lengths[r]:,} tokens of KV ({prompts[r]:,} of prompt and {made[r]:,} "
                         f"of output); the engine model has {kv:,} (kv_tokens)")
    return prompts, made


class EnginePool:
    """The engines behind the balancer, and how it picks one for a request (its placement):
    ``room``, the fewest in flight (with limits that follow the engines: the most room under
    its limit), ties in turns, as ``sfqtui proxy`` picks an upstream; on a trace with blocks
    (semantics §14) also ``prefix``, the engine its own index believes holds the longest prefix
    among those with a free place (while one has nothing in flight, among those that start the
    request at once; the room rule when none has one, and between equals), or
    ``affinity``, the longest prefix wherever it is (load ignored: a reference). It serves a
    replay's loop directly (the servers of ``sfqtui.core.replay.servers``, but for the capacity:
    ``servers.EngineServers``), with each held chunk's prompt and output tokens (None: retired)."""

    def __init__(self, settings: EngineSettings, window: RequestWindow) -> None:
        self.model = settings.model
        self.window = window
        self.tokens: list[tuple[list[int], list[int]] | None] = []
        self.blocks: list[PrefixBlocks | None] = []  # each held chunk's prompt blocks (None: none, or retired)
        self.engines = [ModelledEngine(settings.model, e) for e in range(settings.engines)]
        self._engines_twice = self.engines * 2  # see route()
        self.next_done = INF  # the earliest next_t of the engines
        self._rescan = False  # next_done may have been an engine's next_t that moved later: settle() looks at every engine
        self._times = [INF] * settings.engines  # each engine's next_t, copied as it changes: finish and settle search it at C speed
        self._ready: list[ModelledEngine] = []  # engines to settle at this timestamp
        self._turn = 0
        # What route() compares, kept as each changes: each engine's requests in flight less its limit
        # under --slots auto (the limits kept by EngineLimits), in a list index() reads at C speed, and its least
        # (min() over it at each dispatch cost more than keeping it).
        self._load = [0] * settings.engines
        self._least = 0
        self._limits: list[int] | None = None
        self.touched = False  # an engine was, since the limits last read the engines (EngineLimits)
        self.overhead = settings.model.overhead_s
        self._sent: deque[tuple[float, ModelledEngine, Held]] = deque()  # on their way to their engines' queues
        self.placement = settings.placement
        self.index: list[PrefixIndex] | None = None  # the balancer's index of each engine's blocks (a trace with blocks)
        self._planned: tuple[int, ModelledEngine] | None = None  # the engine predicted() chose for a request about to be sent
        self.block_tokens = 0  # the trace's, once a chunk with blocks entered

    @property
    def limits(self) -> list[int] | None:
        """Each engine's limit under --slots auto (None: fixed slots)."""
        return self._limits

    @limits.setter
    def limits(self, limits: list[int] | None) -> None:
        self._limits = limits
        self._load = [e.outstanding - (0 if limits is None else limits[e.index]) for e in self.engines]
        self._least = min(self._load)

    @property
    def busy(self) -> bool:
        return any(e.outstanding for e in self.engines)

    def entering(self, trace: Trace) -> Sequence[float]:
        """The engines time each request: they keep the chunk's tokens, the window no service times."""
        self.tokens.append(request_tokens(trace, self.model))
        blocks = trace.prefix_blocks
        self.blocks.append(blocks)
        if blocks is not None and self.index is None:
            for engine in self.engines:
                engine.cache = PrefixCache(self.model.kv_tokens, blocks.block_tokens)
            self.index = [PrefixIndex(self.model.kv_tokens // blocks.block_tokens) for _ in self.engines]
            self.block_tokens = blocks.block_tokens
        return ()

    def retired(self, chunks: range) -> None:
        for k in chunks:
            self.tokens[k] = None
            self.blocks[k] = None

    @property
    def caching(self) -> bool:
        """Whether the engines model their prefix caches (the trace has blocks)."""
        return self.engines[0].cache is not None

    def take_cached(self) -> tuple[dict[int, int], dict[int, float]] | None:
        """The cached prompt tokens of each request that started since the last call, and when
        each makes its first token (None: no caches)."""
        if not self.caching:
            return None
        cached: dict[int, int] = {}
        first_token: dict[int, float] = {}
        for engine in self.engines:
            cached.update(engine.cached)
            first_token.update(engine.first_token)
            engine.cached, engine.first_token = {}, {}
        return cached, first_token

    def unfinished(self) -> Iterator[int]:
        """The requests sent to an engine and not finished (on their way, queued or running there)."""
        yield from (held[0] for _t, _engine, held in self._sent)
        for engine in self.engines:
            yield from (held[0] for held in engine.queue)
            yield from (held[0] for _finish, _turn, held in engine.batch)

    def on_the_way(self, engine: ModelledEngine, sent_by: float) -> int:
        """The requests on their way to ``engine`` (request_overhead_ms) that were sent at or before ``sent_by``."""
        overhead, n = self.overhead, 0
        for arrives, to, _held in self._sent:
            if arrives - overhead > sent_by:
                break
            n += to is engine
        return n

    def route(self, blocks: Sequence[int] | None = None, tokens: int = 0, take_turn: bool = True) -> ModelledEngine:
        """The engine the next request (with its prompt's ``blocks`` and ``tokens`` of KV, prompt and
        output) goes to: by its prefix under --placement prefix or affinity, else the least (in flight
        less limit, (index - turn) mod n). ``take_turn=False``: only asked, the turn stays for the
        request that is sent."""
        engines = self.engines
        n = len(engines)
        if n == 1:
            return engines[0]
        turn = (self._turn + 1) % n
        if take_turn:
            self._turn = turn
        if blocks is not None and self.placement != "room" and self.index is not None:
            return self._by_prefix(blocks, tokens, turn)
        load = self._load
        # The first of the least from the engine whose turn it is, found in the loads laid twice end to end: one copy, not three.
        return self._engines_twice[(load + load).index(self._least, turn)]

    def _by_prefix(self, blocks: Sequence[int], tokens: int, turn: int) -> ModelledEngine:
        """The engine believed to hold the longest prefix of ``blocks``: under ``prefix`` among
        the engines with a free place (a place under its limit, and no queue) and, while an engine
        with a free place has nothing in flight, only among those that start the request at once
        (so it never waits for a warm engine's step while an engine stands idle); under
        ``affinity`` among all; then the room rule."""
        assert self.index is not None
        engines, limits, n = self.engines, self.limits, len(self.engines)
        places = self.model.max_num_seqs
        bounded = self.placement == "prefix"
        rooms = [(places if limits is None else limits[e]) - engine.outstanding for e, engine in enumerate(engines)]
        idle = bounded and any(room > 0 and not engine.outstanding for room, engine in zip(rooms, engines))
        at_once = idle and not self.overhead  # a request on its way (request_overhead_ms) starts nowhere at once
        best, best_key = engines[0], (True, 0, INF, n)
        for e, engine in enumerate(engines):
            room = rooms[e]
            full = bounded and (room <= 0 or bool(engine.queue))  # an engine that queues has no place to give now
            if idle and not full and engine.outstanding:
                full = not (at_once and engine.starts_at_once(blocks, tokens))
            held = 0 if full else self.index[e].lookup(blocks)
            key = (full, -held, -room, (e - turn) % n)
            if key < best_key:
                best, best_key = engine, key
        return best

    def predicted(self, req: int, sending: bool = True) -> int:
        """The prompt tokens of request ``req`` the balancer's index believes cached at the engine
        it is about to be sent to (which ``send`` then takes): 0 without blocks. ``sending=False``:
        of a request that may not be sent now (Dynamo prices each queue head by it), nothing chosen."""
        blocks = self._blocks_of(req)
        if blocks is None or self.index is None:
            return 0
        size = self.window.size
        prompts, outputs = self.tokens[req // size]  # type: ignore[misc]  # a request being priced is in a held chunk
        prompt = prompts[req % size]
        # the turn moves on when a request is sent: a priced one may wait (DRR)
        engine = self.route(blocks, prompt + outputs[req % size], take_turn=False)
        if sending:
            self._planned = (req, engine)
        return min(self.index[engine.index].lookup(blocks), max(0, prompt - 1) // self.block_tokens) * self.block_tokens

    def _blocks_of(self, req: int) -> Sequence[int] | None:
        size = self.window.size
        blocks = self.blocks[req // size]
        return None if blocks is None else blocks.of(req % size)

    def send(self, now: float, req: int, user: User, pool: int, rep: int) -> int:
        """Send a request at ``now``: the engine it went to."""
        size = self.window.size
        prompts, outputs = self.tokens[req // size]  # type: ignore[misc]  # the chunk of a request just dispatched is not retired
        r = req % size
        index = self.index
        if index is None:  # a trace without blocks: the room rule of route(), written out; nothing more per request
            self._turn = turn = (self._turn + 1) % len(self.engines)
            load = self._load
            engine = self._engines_twice[(load + load).index(self._least, turn)]
            blocks = None
        else:
            blocks = self._blocks_of(req)
            planned = self._planned
            if planned is not None and planned[0] == req:
                engine = planned[1]
                self._planned = None
                self._turn = (self._turn + 1) % len(self.engines)  # as route() would have moved it
            else:
                engine = self.route(blocks, prompts[r] + outputs[r])
            if blocks is not None:
                index[engine.index].sent(blocks)
        e = engine.index
        held: Held = (req, user, pool, rep, prompts[r], outputs[r], blocks, e)
        self.touched = engine.touched = True
        engine.outstanding += 1
        load = self._load
        load[e] += 1
        least = self._least
        if load[e] == least + 1 and least not in load:  # it was the last engine at the least
            self._least = least + 1
        if self.overhead:
            self._sent.append((now + self.overhead, engine, held))
            return e
        if engine.resting:  # between steps (no step end, INF): it settles at this timestamp, as submit() says
            engine.queue.append(held)
            if engine not in self._ready:
                self._ready.append(engine)
            return e
        if engine.next_t == self.next_done:
            self._rescan = True  # its run of steps may start again, its next step end later
        if engine.submit(now, held):
            if engine not in self._ready:
                self._ready.append(engine)
        elif engine.next_t < self.next_done:  # a head that fits joins at the end of the step under way
            self.next_done = engine.next_t
        self._times[e] = engine.next_t
        return e

    def finish(self, now: float) -> list[Held]:
        """Every engine whose step ends at ``now`` with something to do ends it, in engine order:
        each request that finished."""
        finished: list[Held] | None = None
        times, load = self._times, self._load
        ending = times.count(now)
        e = -1
        while ending:  # in engine order
            ending -= 1
            e = times.index(now, e + 1)
            engine = self.engines[e]
            done = engine.end_step()
            times[e] = engine.next_t
            load[e] -= len(done)
            if load[e] < self._least:
                self._least = load[e]
            if finished is None:
                finished = done  # mostly the only one: its own list, not a copy
            else:
                finished += done
            self._ready.append(engine)
            engine.touched = True
        sent = self._sent
        while sent and sent[0][0] == now:  # after the steps that end now: a request that comes as a place frees takes it
            _t, engine, held = sent.popleft()
            engine.touched = True
            if engine.submit(now, held) and engine not in self._ready:
                self._ready.append(engine)
            times[engine.index] = engine.next_t
        self.touched = self._rescan = True
        return [] if finished is None else finished

    def settle(self, now: float) -> list[Held]:
        """The engines between steps at ``now`` start their next steps, in engine order:
        each request that joined a batch."""
        ready = self._ready
        if len(ready) == 1:  # mostly
            engine = ready[0]
            joined = engine.settle(now)
            self._times[engine.index] = engine.next_t
        else:
            joined = []
            ready.sort(key=_index)
            for engine in ready:
                joined += engine.settle(now)
                self._times[engine.index] = engine.next_t
        if self._rescan:
            self._rescan = False
            first = min(self._times)
        else:  # only the engines that settled moved, from no step (INF) to their new run's: the others' earliest holds
            first = self.next_done
            for engine in ready:
                if engine.next_t < first:
                    first = engine.next_t
        self._ready.clear()
        sent = self._sent
        self.next_done = sent[0][0] if sent and sent[0][0] < first else first
        return joined
