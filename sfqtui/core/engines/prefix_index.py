"""The balancer's own index of what each engine's prefix cache holds (semantics §14), as llm-d's
approximate prefix-cache scorer keeps one: the blocks of every prompt it sent to the engine,
least recently sent leaving first once the index holds as many blocks as the engine has KV
for. It never hears from the engine, so it does not see the blocks that running requests'
KV pushed out: what it predicts is an estimate, which ``calibrate`` sets against the cached
tokens the engine reported."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


class PrefixIndex:
    """Blocks believed held by one engine, at most ``capacity`` of them."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.blocks: OrderedDict[int, None] = OrderedDict()  # least recently sent first

    def lookup(self, blocks: Sequence[int]) -> int:
        """How many leading blocks of ``blocks`` the engine is believed to hold."""
        held = self.blocks
        for k, block in enumerate(blocks):
            if block not in held:
                return k
        return len(blocks)

    def sent(self, blocks: Sequence[int]) -> None:
        """A prompt with ``blocks`` was sent to the engine: all are held now, its first block the
        most recent (of one prompt, the tail leaves first, as in the engine)."""
        held = self.blocks
        for block in reversed(blocks):
            held[block] = None
            held.move_to_end(block)
        while len(held) > self.capacity:
            held.popitem(last=False)
