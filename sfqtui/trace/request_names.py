"""Request ids by code as Arrow string chunks: the store every source gives the views."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class ArrowRequestNames:
    """Request ids by code, as Arrow string chunks (the core's RequestNames)."""

    def __init__(self) -> None:
        self._chunks: list[pa.Array] = []
        self._starts: list[int] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def extend(self, names: pa.Array) -> None:
        if len(names):
            if names.type != pa.string():  # a trace written by polars holds large strings; the chunks stay of one type
                names = names.cast(pa.string())
            self._starts.append(self._size)
            self._chunks.append(names)
            self._size += len(names)

    def __getitem__(self, code: int) -> str:
        j = bisect_right(self._starts, code) - 1
        return self._chunks[j][code - self._starts[j]].as_py()

    def find(self, name: str) -> int | None:
        for start, chunk in zip(self._starts, self._chunks):
            at = pc.index(chunk, pa.scalar(name, pa.string())).as_py()
            if at >= 0:
                return start + at
        return None

    def containing(self, text: str) -> np.ndarray:
        found = [np.asarray(pc.indices_nonzero(pc.match_substring(chunk, text, ignore_case=True)), np.int64) + start
                 for start, chunk in zip(list(self._starts), list(self._chunks))]
        return np.concatenate(found) if found else np.empty(0, np.int64)

    def take(self, codes: Collection[int]) -> pa.ChunkedArray:
        wanted = np.asarray(codes, np.int64)
        whole = pa.chunked_array(list(self._chunks), pa.string())
        return whole.take(pa.array(wanted, mask=wanted < 0))
