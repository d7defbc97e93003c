"""An engine's prefix cache (docs/semantics.md §14): the prompt blocks it holds, in one KV
budget with the running requests' KV.

A block is ``block_tokens`` consecutive prompt tokens named by a chained hash (equal hashes
at position k mean equal prompts through block k), so the longest held prefix of a prompt is
its blocks up to the first one not held. A running request pins its blocks (several running
requests share a block, which takes its KV once) and reserves KV for the rest of its length
(the prompt's last partial block and its output); a block no running request pins stays held
until the budget needs its KV, and such blocks leave least recently used first. When a
request finishes its blocks are released last block first, so that of one prompt the tail
leaves before the head (as vLLM frees a request's blocks), which keeps the shared heads.

Without sharing, a request fits exactly when ``EngineModel.admits`` says so: pinned blocks
plus reserved tokens are then the running requests' whole lengths.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from sfqtui.errors import InputError


class PrefixCache:
    """The blocks an engine holds within ``kv_tokens`` of KV, ``block_tokens`` a block.

    ``lookup`` says how many blocks of a prompt are held (read only); ``fits`` whether a
    request can start; ``admit`` starts it (pins its blocks, evicts what the budget needs) and
    ``release`` finishes it. ``queried`` and ``hit`` count prompt tokens looked up and found
    at admission (vLLM's prefix-cache queries and hits)."""

    def __init__(self, kv_tokens: int, block_tokens: int) -> None:
        for name, value in (("kv_tokens", kv_tokens), ("block_tokens", block_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} {value!r}: must be a whole number of at least 1")
        self.kv_tokens = kv_tokens
        self.block_tokens = block_tokens
        self.pins: dict[int, int] = {}  # a pinned block: how many running requests pin it
        self.free: OrderedDict[int, None] = OrderedDict()  # held, pinned by none, least recently used first
        self.reserved = 0  # KV tokens reserved by running requests beyond their blocks
        self.queried = 0
        self.hit = 0

    @property
    def held(self) -> int:
        """Blocks held, pinned or not."""
        return len(self.pins) + len(self.free)

    @property
    def used(self) -> int:
        """KV tokens in use: every held block and the running requests' reservations."""
        return self.held * self.block_tokens + self.reserved

    @property
    def pinned(self) -> int:
        """KV tokens no eviction can free: pinned blocks and reservations."""
        return len(self.pins) * self.block_tokens + self.reserved

    def lookup(self, blocks: Sequence[int]) -> int:
        """How many leading blocks of ``blocks`` are held (the longest held prefix)."""
        pins, free = self.pins, self.free
        for k, block in enumerate(blocks):
            if block not in pins and block not in free:
                return k
        return len(blocks)

    def _beyond_blocks(self, blocks: Sequence[int], tokens: int) -> int:
        extra = tokens - len(blocks) * self.block_tokens
        if extra < 0:
            raise InputError(f"a request of {tokens:,} tokens cannot have {len(blocks):,} blocks of {self.block_tokens:,} tokens")
        return extra

    def fits(self, blocks: Sequence[int], tokens: int) -> bool:
        """Whether a request of ``tokens`` KV tokens (prompt and output) with prompt blocks
        ``blocks`` can start: its blocks not pinned yet and the rest of its length fit beside
        what is pinned, evicting unpinned blocks as needed."""
        extra = self._beyond_blocks(blocks, tokens)
        pins = self.pins
        new = len({block for block in blocks if block not in pins})
        return self.pinned + new * self.block_tokens + extra <= self.kv_tokens

    def admit(self, blocks: Sequence[int], tokens: int) -> int:
        """A request starts: the blocks of its longest held prefix (what its prefill skips).
        All its blocks are pinned afterwards; the least recently used unpinned blocks leave as
        the budget needs. InputError when it does not fit (ask ``fits`` first)."""
        if not self.fits(blocks, tokens):
            raise InputError(f"a request of {tokens:,} tokens does not fit in the KV left ({self.kv_tokens - self.pinned:,} tokens)")
        cached = self.lookup(blocks)
        self.queried += len(blocks) * self.block_tokens
        self.hit += cached * self.block_tokens
        pins, free = self.pins, self.free
        for block in blocks:
            if block in free:
                del free[block]
            pins[block] = pins.get(block, 0) + 1
        self.reserved += self._beyond_blocks(blocks, tokens)
        over = self.used - self.kv_tokens
        while over > 0:
            free.popitem(last=False)
            over -= self.block_tokens
        return cached

    def release(self, blocks: Sequence[int], tokens: int) -> None:
        """A request admitted with ``blocks`` and ``tokens`` finishes: its reservation ends and
        its blocks stay held, unpinned once no running request pins them, as the most recently
        used (its last block before its first, so the tail is evicted first)."""
        self.reserved -= self._beyond_blocks(blocks, tokens)
        pins, free = self.pins, self.free
        for block in reversed(blocks):
            left = pins[block] - 1
            if left:
                pins[block] = left
            else:
                del pins[block]
                free[block] = None
