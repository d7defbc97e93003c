"""A trace's prompt blocks (semantics §14): read into the core's compact form, whole or a chunk
at a time, and each bad prefix_blocks refused with one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.trace.chunks import open_trace
from sfqtui.trace.load import load_trace
from sfqtui.trace.write import write_trace

GOOD = {
    "request_id": ["r1", "r2", "r3"],
    "user": ["a", "b", "a"],
    "arrival_s": [0.0, 1.0, 2.0],
    "input_tokens": [40, 16, 33],
    "output_tokens": [5, 6, 7],
    "prefix_blocks": [[1, 2], [3], [1, 2, 4]],
}


def written(path: Path, metadata: dict[str, object] | None = None, **changes: object) -> Path:
    data = dict(GOOD, **changes)
    write_trace(pl.DataFrame(data), path, {"block_tokens": 10} if metadata is None else metadata)
    return path


def test_blocks_are_read_whole_and_by_chunk(tmp_path: Path) -> None:
    trace = written(tmp_path / "t.parquet", prefix_blocks=pl.Series([[1, 2], None, [1, 2, 2**64 - 1]], dtype=pl.List(pl.UInt64)))
    loaded = load_trace(trace).trace
    assert loaded.prefix_blocks is not None and "prefix_blocks" in loaded.columns
    assert [list(loaded.prefix_blocks.of(r)) for r in range(3)] == [[1, 2], [], [1, 2, 2**64 - 1]]
    assert loaded.prefix_blocks.block_tokens == 10
    chunks = [chunk.trace for chunk in open_trace(trace, chunk_rows=2).chunks()]
    assert [[list(c.prefix_blocks.of(r)) for r in range(len(c))] for c in chunks if c.prefix_blocks] == [[[1, 2], []], [[1, 2, 2**64 - 1]]]


def test_a_trace_without_blocks_has_none(tmp_path: Path) -> None:
    trace = tmp_path / "t.parquet"
    write_trace(pl.DataFrame({k: v for k, v in GOOD.items() if k != "prefix_blocks"}), trace, {})
    assert load_trace(trace).trace.prefix_blocks is None


BAD: dict[str, tuple[dict[str, object], dict[str, object] | None, str]] = {
    "not a list": (dict(prefix_blocks=[1, 2, 3]), None,
                   "column 'prefix_blocks', row 0 (counting from 0): value 1 has type Int64; prefix_blocks must be lists of integers"),
    "a list of strings": (dict(prefix_blocks=[["a"], ["b"], ["c"]]), None, "value ['a'] has type List(String); prefix_blocks must be lists of integers"),
    "a negative hash": (dict(prefix_blocks=[[1], [3], [1, -2]]), None, "row 2 (counting from 0): value [1, -2]; prefix_blocks must hold block hashes"),
    "a null hash": (dict(prefix_blocks=[[1], [None], [1]]), None, "row 1 (counting from 0): value [None]; prefix_blocks must hold block hashes"),
    "more blocks than the input allows": (dict(prefix_blocks=[[1, 2], [3, 4], [1]]), None,
                                          "row 1 (counting from 0): value [3, 4]; more blocks than input_tokens allows (10 tokens a block"),
    "no block_tokens": ({}, {}, "a trace with prefix_blocks needs the metadata key block_tokens, a whole number >= 1"),
    "a bad block_tokens": ({}, {"block_tokens": 0}, "needs the metadata key block_tokens (0), a whole number >= 1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_blocks_are_refused_with_one_line(case: str, tmp_path: Path, cli: CliRunner) -> None:
    changes, metadata, expected = BAD[case]
    trace = written(tmp_path / "bad.parquet", metadata, **changes)
    result = cli.invoke(app, ["simulate", str(trace), "-o", str(tmp_path / "log.parquet")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr
    assert not (tmp_path / "log.parquet").exists()
