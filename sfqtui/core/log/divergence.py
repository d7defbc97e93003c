"""Where two runs' dispatch orders part: the first position that differs, and how many do.

Both runs replay the same requests, and a request's code is the order of its arrival in
either log, so dispatch position n of each run can be compared by request code. Counts
are kept as a prefix sum, extended as the cursor (or the loading) goes further.
"""

from __future__ import annotations

from array import array

from sfqtui.core.log.table import EventTable


class Divergence:
    def __init__(self, a: EventTable, b: EventTable) -> None:
        self.a, self.b = a, b
        self._differing = array("q")  # positions 0..i that differ, for each i compared so far
        self.first: int | None = None

    def _extend(self, upto: int) -> None:
        a, b, counts = self.a, self.b, self._differing
        upto = min(upto, len(a.dispatches) - 1, len(b.dispatches) - 1)
        total = counts[-1] if counts else 0
        for n in range(len(counts), upto + 1):
            if a.req[a.dispatches[n]] != b.req[b.dispatches[n]]:
                total += 1
                if self.first is None:
                    self.first = n
            counts.append(total)

    def differs(self, n: int) -> bool:
        """Whether the two runs sent different requests at dispatch position n."""
        self._extend(n)
        if n < 0 or n >= len(self._differing):
            return False
        return self._differing[n] != (self._differing[n - 1] if n else 0)

    def differing_until(self, n: int) -> int:
        """How many of the dispatch positions 0..n differ (among those both runs reached)."""
        self._extend(n)
        if n < 0 or not self._differing:
            return 0
        return self._differing[min(n, len(self._differing) - 1)]
