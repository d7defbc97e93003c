"""Where dispatched requests were placed, per upstream (an engine of a replay, a proxy's
upstream), as of any event: what the placement views show, rebuilt from the event log.

A request is placed where its first row naming an upstream says: its dispatch (a replay with
the engine model, a lone proxy, a replay of a proxy's recording as it ran), else its start (a
group replica's stream, whose dispatches the store writes before an upstream is chosen). A
dispatch may say the prompt tokens the proxy's index predicted its upstream held
(``--placement prefix``); a start row (a replay on engines) or a complete row (a proxy, from
the upstream's usage) the tokens the engine found cached. A replay of a proxy's recording as
it ran carries the recording's figures on the same rows as the proxy's stream. Each figure is
kept per upstream as event indices with running sums, so the figures at any event are a
bisection away, however long the log.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass

NONE = -1


@dataclass(frozen=True)
class UpstreamFigures:
    """One upstream's placements up to an event."""

    name: str
    placed: int  # requests placed there
    inflight: int  # of those, not complete or cancelled yet
    predicted: int | None  # prompt tokens the proxy's index predicted it held (None: the log says no prediction)
    cached: int | None  # prompt tokens it found cached, of the requests that reported it (None: the log says none)


class _Upstream:
    """Event indices of one upstream's placements, finishes and cache reports, with running sums."""

    def __init__(self) -> None:
        self.placed = array("i")
        self.predicted = array("q")  # after each placement: the predictions so far
        self.finished = array("i")
        self.cached_at = array("i")
        self.cached = array("q")  # after each report: the cached tokens so far

    @staticmethod
    def _sum(events: array, sums: array, k: int) -> int:
        n = bisect_right(events, k)
        return sums[n - 1] if n else 0

    def at(self, name: str, k: int, predicts: bool, reports: bool) -> UpstreamFigures:
        placed = bisect_right(self.placed, k)
        return UpstreamFigures(name, placed, placed - bisect_right(self.finished, k),
                               self._sum(self.placed, self.predicted, k) if predicts else None,
                               self._sum(self.cached_at, self.cached, k) if reports else None)


class Placements:
    """Per upstream, what its requests did; fed each batch's rows in order (``EventTable.append``)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._code: dict[str, int] = {}
        self._upstreams: list[_Upstream] = []
        self.upstream_of = array("i")  # per request code: its upstream's code (-1: not placed)
        self.predicted_of: dict[int, int] = {}  # per request code: the prompt tokens its upstream was predicted to hold
        self.predicts = False  # some dispatch said a prediction
        self.reports = False  # some row said the cached tokens found

    def __bool__(self) -> bool:
        return bool(self.names)

    def name_of(self, code: int) -> str | None:
        """The upstream request ``code`` was placed on (None: not placed, as far as the log says)."""
        u = self.upstream_of[code] if 0 <= code < len(self.upstream_of) else NONE
        return None if u < 0 else self.names[u]

    def place(self, k: int, code: int, name: str, predicted: int | None) -> None:
        """Row ``k`` names the upstream ``name`` of request ``code`` (and what was predicted there); a request is placed once."""
        if code < 0:
            return
        if code >= len(self.upstream_of):
            self.upstream_of.extend(array("i", [NONE]) * (code + 1 - len(self.upstream_of)))
        if self.upstream_of[code] >= 0:
            return
        u = self._code.get(name)
        if u is None:
            u = self._code[name] = len(self.names)
            self.names.append(name)
            self._upstreams.append(_Upstream())
        self.upstream_of[code] = u
        up = self._upstreams[u]
        up.placed.append(k)
        total = up.predicted[-1] if up.predicted else 0
        if predicted is not None:
            self.predicts = True
            self.predicted_of[code] = predicted
            total += predicted
        up.predicted.append(total)

    def finish(self, k: int, code: int) -> None:
        """Row ``k`` completes or cancels request ``code``."""
        u = self.upstream_of[code] if 0 <= code < len(self.upstream_of) else NONE
        if u >= 0:
            self._upstreams[u].finished.append(k)

    def cached(self, k: int, code: int, tokens: int) -> None:
        """Row ``k`` says request ``code``'s upstream found ``tokens`` of its prompt cached."""
        self.reports = True
        u = self.upstream_of[code] if 0 <= code < len(self.upstream_of) else NONE
        if u >= 0:
            up = self._upstreams[u]
            up.cached_at.append(k)
            up.cached.append((up.cached[-1] if up.cached else 0) + tokens)

    def at(self, k: int) -> list[UpstreamFigures]:
        """Each upstream's figures up to event ``k``, in name order (those with nothing placed yet left out)."""
        order = sorted(range(len(self.names)), key=lambda u: _name_order(self.names[u]))
        figures = [self._upstreams[u].at(self.names[u], k, self.predicts, self.reports) for u in order]
        return [f for f in figures if f.placed]


def _name_order(name: str) -> tuple[int, str]:
    """Engines by number (2 before 10), then upstreams by address."""
    return (int(name), "") if name.isdigit() else (1 << 62, name)


def upstream_title(name: str) -> str:
    """How a view names an upstream: a replay's engines are numbered ("engine 0"), a proxy's (and its recording's) go by their address."""
    return f"engine {name}" if name.isdigit() else name

