"""A prompt's blocks as the sfqtui proxy and the emulated engine name them (docs/semantics.md §14).

Neither tokenises, so a block is ``block_tokens`` tokens as they count tokens without a
tokenizer: ``CHARS_PER_TOKEN x block_tokens`` characters of the prompt's text (the messages'
contents one after another, the characters their prompt-token counts are made of; roles and
message boundaries are not part of it), or ``block_tokens`` token ids of a prompt given as
ids. Only whole blocks are named, so blocks x ``block_tokens`` never exceeds that count.

A block's hash is the first 8 bytes of BLAKE2b over the previous block's hash and the
block's own bytes (the text as UTF-8, the ids as decimal numbers): chained, so equal hashes
at position k mean equal prompts through block k, and the same in every process (Python's
``hash()`` is salted per process).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

CHARS_PER_TOKEN = 4  # the proxy's and the engine's count without a tokenizer: one token per 4 characters
DEFAULT_BLOCK_TOKENS = 16  # vLLM's default --block-size


def _chained(blocks: Iterable[bytes]) -> list[int]:
    hashes: list[int] = []
    previous = b""
    for block in blocks:
        previous = hashlib.blake2b(previous + block, digest_size=8).digest()
        hashes.append(int.from_bytes(previous, "little"))
    return hashes


def prompt_blocks(text: str, ids: Sequence[int], block_tokens: int) -> list[int]:
    """The chained hashes of a prompt's whole blocks: of its token ids when it is given as ids
    alone, else of its text (ids mixed with text are left out of the blocks)."""
    if ids and not text:
        return _chained(",".join(map(str, ids[k:k + block_tokens])).encode()
                        for k in range(0, len(ids) - block_tokens + 1, block_tokens))
    size = block_tokens * CHARS_PER_TOKEN
    return _chained(text[k:k + size].encode() for k in range(0, len(text) - size + 1, size))
