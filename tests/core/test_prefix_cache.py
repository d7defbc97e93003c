"""An engine's prefix cache (docs/semantics.md §14): the longest held prefix, pinned blocks
that no eviction frees, least recently used eviction of the rest, the tail of a prompt
leaving before its head, and the budget shared with the running requests' KV."""

from __future__ import annotations

import random

import pytest

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.prefix_cache import PrefixCache
from sfqtui.errors import InputError


def test_lookup_is_the_longest_held_prefix_and_reads_only() -> None:
    cache = PrefixCache(kv_tokens=100, block_tokens=10)
    assert cache.lookup([1, 2, 3]) == 0
    assert cache.admit([1, 2, 3], 35) == 0
    assert cache.lookup([1, 2, 3]) == 3
    assert cache.lookup([1, 2, 4, 5]) == 2
    assert cache.lookup([9, 2, 3]) == 0  # a held block after a missing one is no prefix
    assert cache.lookup([]) == 0
    assert (cache.queried, cache.hit) == (30, 0)


def test_admit_returns_the_cached_blocks_and_counts_the_hit_tokens() -> None:
    cache = PrefixCache(kv_tokens=200, block_tokens=10)
    cache.admit([1, 2], 25)
    cache.release([1, 2], 25)
    assert cache.admit([1, 2, 3], 40) == 2
    assert (cache.queried, cache.hit) == (50, 20)


def test_running_requests_share_a_block_and_it_takes_its_kv_once() -> None:
    cache = PrefixCache(kv_tokens=50, block_tokens=10)
    cache.admit([1, 2], 25)  # 2 blocks + 5 tokens
    assert cache.used == 25
    assert cache.fits([1, 2], 25)  # the blocks are pinned already: only 5 more
    cache.admit([1, 2], 25)
    assert (cache.used, cache.held) == (30, 2)
    cache.release([1, 2], 25)
    assert cache.pins == {1: 1, 2: 1}  # still pinned by the other
    cache.release([1, 2], 25)
    assert (cache.pins, list(cache.free), cache.reserved) == ({}, [2, 1], 0)


def test_pinned_blocks_are_never_evicted_and_bound_what_fits() -> None:
    cache = PrefixCache(kv_tokens=60, block_tokens=10)
    cache.admit([1, 2, 3], 40)
    assert not cache.fits([7, 8], 30)  # 40 pinned + 20 new blocks + 10 more
    assert cache.fits([7], 20)
    with pytest.raises(InputError, match="does not fit"):
        cache.admit([7, 8], 30)
    assert cache.lookup([1, 2, 3]) == 3


def test_the_least_recently_used_unpinned_blocks_leave_first_tail_before_head() -> None:
    cache = PrefixCache(kv_tokens=60, block_tokens=10)
    cache.admit([1, 2, 3], 30)
    cache.release([1, 2, 3], 30)
    cache.admit([4, 5], 20)
    cache.release([4, 5], 20)
    assert list(cache.free) == [3, 2, 1, 5, 4]
    cache.admit([6, 7], 30)  # 20 tokens over the budget: 3 and 2 leave, no more
    assert cache.used <= 60
    assert cache.lookup([1, 2, 3]) == 1  # the head of the older prompt stayed longest
    assert cache.lookup([4, 5]) == 2
    cache.admit([4, 5], 20)  # a hit moves them out of the free list, and back as the most recent
    cache.release([4, 5], 20)
    cache.release([6, 7], 30)
    assert list(cache.free) == [1, 5, 4, 7, 6]


def test_a_hit_saves_the_block_from_eviction() -> None:
    cache = PrefixCache(kv_tokens=30, block_tokens=10)
    for blocks in ([1], [2], [3]):
        cache.admit(blocks, 10)
        cache.release(blocks, 10)
    cache.admit([1], 10)
    cache.release([1], 10)  # 1 is now the most recent
    cache.admit([4], 10)
    cache.release([4], 10)
    assert [cache.lookup([b]) for b in (1, 2, 3, 4)] == [1, 0, 1, 1]


def test_without_sharing_a_request_fits_exactly_when_the_engine_model_admits_it() -> None:
    model = EngineModel(max_num_seqs=1000, kv_tokens=500)
    cache = PrefixCache(model.kv_tokens, block_tokens=16)
    rng = random.Random(7)
    running: list[tuple[list[int], int]] = []
    next_block = 0
    for _ in range(2000):
        if running and rng.random() < 0.45:
            blocks, tokens = running.pop(rng.randrange(len(running)))
            cache.release(blocks, tokens)
            continue
        prompt, output = rng.randrange(0, 200), rng.randrange(1, 60)
        blocks = list(range(next_block, next_block + prompt // 16))
        next_block += len(blocks)
        reserved = sum(t for _b, t in running)
        assert cache.fits(blocks, prompt + output) == model.admits(len(running), reserved, prompt + output)
        if cache.fits(blocks, prompt + output):
            cache.admit(blocks, prompt + output)
            running.append((blocks, prompt + output))
        assert cache.pinned == sum(t for _b, t in running)
        assert cache.used <= model.kv_tokens


def test_more_blocks_than_tokens_and_bad_sizes_are_refused() -> None:
    cache = PrefixCache(kv_tokens=100, block_tokens=10)
    with pytest.raises(InputError, match="cannot have 3 blocks"):
        cache.fits([1, 2, 3], 25)
    with pytest.raises(InputError, match="block_tokens 0"):
        PrefixCache(kv_tokens=100, block_tokens=0)
