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

The index is the replay's balancer index (``sfqtui.core.engines.prefix_index``), one per
upstream: the chained hashes of the blocks of the prompts sent there
(``sfqtui.core.engines.prompt_blocks``), at most ``--prefix-index-blocks`` each, the least
recently sent leaving first; a prompt's blocks are refreshed last block first, so that of one
prompt the head stays longest, as an engine that frees a request's tail first keeps it. It
is what the proxy sent, not what the engine kept: an engine that evicted sooner holds less.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sfqtui.core.engines.prefix_index import PrefixIndex
from sfqtui.protocol import UpstreamPlacement

PLACEMENTS = ("room", "prefix")
# Blocks the index keeps per upstream: 524,288 tokens at vLLM's 16 a block, about the KV cache of
# an 8B model on one 80 GB GPU; --prefix-index-blocks sets it to what an engine holds.
DEFAULT_INDEX_BLOCKS = 32_768


class PrefixPlacement:
    """``--placement prefix``: puts the upstream with room that holds the longest prefix first."""

    def __init__(self, indexes: Sequence[PrefixIndex], has_room: Callable[[int], bool], block_tokens: int) -> None:
        self.indexes = indexes  # per upstream, the blocks the proxy sent there
        self._has_room = has_room
        self.block_tokens = block_tokens
        upstreams = len(indexes)
        self.placed, self.looked_up, self.predicted = [0] * upstreams, [0] * upstreams, [0] * upstreams  # per upstream, since start

    def sent(self, index: int, blocks: Sequence[int]) -> int:
        """A request with these prompt blocks was sent to upstream ``index``: counted, and its blocks
        held there from now on; returns how many of them the index said it held before."""
        held = self.indexes[index].lookup(blocks)
        self.indexes[index].sent(blocks)
        self.placed[index] += 1
        self.looked_up[index] += len(blocks) * self.block_tokens
        self.predicted[index] += held * self.block_tokens
        return held

    def state(self, labels: Sequence[str]) -> list[UpstreamPlacement]:
        """The state's ``placement``: each upstream's placements and predicted hits so far."""
        return [{"upstream": label, "placed": self.placed[i], "prompt_tokens": self.looked_up[i],
                 "predicted_cached_tokens": self.predicted[i], "index_blocks": len(self.indexes[i].blocks)} for i, label in enumerate(labels)]

    def order(self, by_room: list[int], blocks: Sequence[int]) -> list[int]:
        """The upstreams to try: ``by_room`` (room order) with the upstream of the longest held
        prefix among those with room moved first."""
        if not blocks:
            return by_room
        held = {i: self.indexes[i].lookup(blocks) for i in by_room}
        roomy = [i for i in by_room if self._has_room(i)] or by_room[:1]
        best = max(roomy, key=held.__getitem__)  # the first of the most held, in room order
        return [best, *(i for i in by_room if i != best)]
