"""A trace's prompt blocks (semantics §14): the ``prefix_blocks`` column, the metadata key
saying how many tokens a block holds, their rules, and the core's compact form of them."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from sfqtui.core.requests.trace import PrefixBlocks
from sfqtui.errors import InputError
from sfqtui.trace.schema import BLOCK_TOKENS_KEY, PREFIX_BLOCKS


def block_tokens(metadata: Mapping[str, Any]) -> int | None:
    """The tokens a prompt block holds, when the metadata says so."""
    value = metadata.get(BLOCK_TOKENS_KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def checked_block_tokens(path: Path, schema: Mapping[str, pl.DataType], metadata: Mapping[str, Any]) -> int | None:
    """block_tokens of a trace with prefix_blocks (None without them), or InputError."""
    if PREFIX_BLOCKS not in schema:
        return None
    if "input_tokens" not in schema:
        raise InputError(f"{path}: a trace with prefix_blocks needs the column 'input_tokens' (semantics §14)")
    found = block_tokens(metadata)
    if found is None:
        said = f" ({metadata[BLOCK_TOKENS_KEY]!r})" if BLOCK_TOKENS_KEY in metadata else ""
        raise InputError(f"{path}: a trace with prefix_blocks needs the metadata key {BLOCK_TOKENS_KEY}{said}, "
                         "a whole number >= 1: the tokens a block holds (semantics §14)")
    return found


def block_rules(tokens: int) -> list[tuple[pl.Expr, str]]:
    """The rows prefix_blocks must not have, and the rule each breaks."""
    blocks = pl.col(PREFIX_BLOCKS)
    return [
        (blocks.list.eval(pl.element().is_null() | (pl.element() < 0)).list.any(),
         "prefix_blocks must hold block hashes, whole numbers >= 0 (uint64)"),
        (blocks.list.len() * tokens > pl.col("input_tokens").fill_null(0),
         f"more blocks than input_tokens allows ({tokens:,} tokens a block, the metadata's {BLOCK_TOKENS_KEY})"),
    ]


def prefix_blocks_of(table: pa.Table, tokens: int | None) -> PrefixBlocks | None:
    """The table's prefix_blocks in the core's compact form (a null cell: no blocks)."""
    if PREFIX_BLOCKS not in table.column_names:
        return None
    if tokens is None:
        raise ValueError("a table with prefix_blocks needs its block_tokens")
    lists = table[PREFIX_BLOCKS].combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    hashes = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.uint64)
    return PrefixBlocks(_typed("Q", hashes), _typed("q", offsets), tokens)


def _typed(typecode: str, values: np.ndarray) -> array:
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values).tobytes())
    return out
