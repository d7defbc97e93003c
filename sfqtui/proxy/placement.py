"""``--placement``: which upstream a dispatched request is sent to (docs/proxy.md, "Placement").

``room`` (the default): the upstream with the most room, least in flight first (with
``--slots auto``: the most room under its limit). ``prefix``: among the upstreams with room,
the one that holds the longest prefix of the request's prompt, by the proxy's own index of
the prompt blocks it sent where (llm-d's approximate prefix-cache scorer does the same); ties,
and a prompt no upstream holds, go by room. An upstream has room while it has fewer requests
in flight than its limit (``--slots auto``) or, with fixed slots, than its even share of them
(``ceil(slots / upstreams)``), so no upstream takes more than its share because its cache is
warm: locality is bounded by load, and when a slot is free some upstream always has room.
Placement chooses only where a dispatched request goes, never when: SFQ's order is the same.

The index holds, for each upstream, the chained hashes of the blocks of the prompts sent
there (``sfqtui.core.engines.prompt_blocks``), at most ``capacity`` blocks each, the least
recently sent leaving first; a prompt's blocks are refreshed last block first, so that of one
prompt the head stays longest, as an engine that frees a request's tail first keeps it. It
is what the proxy sent, not what the engine kept: an engine that evicted sooner holds less.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from sfqtui.protocol import UpstreamPlacement

PLACEMENTS = ("room", "prefix")
# Blocks the index keeps per upstream: 524,288 tokens at vLLM's 16 a block, about the KV cache of
# an 8B model on one 80 GB GPU; --prefix-index-blocks sets it to what an engine holds.
DEFAULT_INDEX_BLOCKS = 32_768


class PrefixIndex:
    """The prompt blocks the proxy sent to each upstream, at most ``capacity`` per upstream."""

    def __init__(self, upstreams: int, capacity: int) -> None:
        self.capacity = capacity
        self._held: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(upstreams)]

    @property
    def upstreams(self) -> int:
        return len(self._held)

    def size(self, index: int) -> int:
        """Blocks held for upstream ``index``."""
        return len(self._held[index])

    def held(self, index: int, blocks: Sequence[int]) -> int:
        """How many leading blocks of ``blocks`` upstream ``index`` was sent (the longest held prefix)."""
        held = self._held[index]
        for k, block in enumerate(blocks):
            if block not in held:
                return k
        return len(blocks)

    def sent(self, index: int, blocks: Sequence[int]) -> None:
        """``blocks`` went to upstream ``index``: held there now, the most recently sent."""
        held = self._held[index]
        for block in reversed(blocks):
            if block in held:
                held.move_to_end(block)
            else:
                held[block] = None
        while len(held) > self.capacity:
            held.popitem(last=False)


class PrefixPlacement:
    """``--placement prefix``: puts the upstream with room that holds the longest prefix first."""

    def __init__(self, index: PrefixIndex, has_room: Callable[[int], bool], block_tokens: int) -> None:
        self.index = index
        self._has_room = has_room
        self.block_tokens = block_tokens
        upstreams = index.upstreams
        self.placed, self.looked_up, self.predicted = [0] * upstreams, [0] * upstreams, [0] * upstreams  # per upstream, since start

    def sent(self, index: int, blocks: Sequence[int]) -> int:
        """A request with these prompt blocks was sent to upstream ``index``: counted, and its blocks
        held there from now on; returns how many of them the index said it held before."""
        held = self.index.held(index, blocks)
        self.index.sent(index, blocks)
        self.placed[index] += 1
        self.looked_up[index] += len(blocks) * self.block_tokens
        self.predicted[index] += held * self.block_tokens
        return held

    def state(self, labels: Sequence[str]) -> list[UpstreamPlacement]:
        """The state's ``placement``: each upstream's placements and predicted hits so far."""
        return [{"upstream": label, "placed": self.placed[i], "prompt_tokens": self.looked_up[i],
                 "predicted_cached_tokens": self.predicted[i], "index_blocks": self.index.size(i)} for i, label in enumerate(labels)]

    def order(self, by_room: list[int], blocks: Sequence[int]) -> list[int]:
        """The upstreams to try: ``by_room`` (room order) with the upstream of the longest held
        prefix among those with room moved first."""
        if not blocks:
            return by_room
        held = {i: self.index.held(i, blocks) for i in by_room}
        roomy = [i for i in by_room if self._has_room(i)] or by_room[:1]
        best = max(roomy, key=held.__getitem__)  # the first of the most held, in room order
        return [best, *(i for i in by_room if i != best)]
