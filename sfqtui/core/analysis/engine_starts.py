"""Fairness where it is felt: a log seen from the engine's side, where a request counts as
served when it starts running (its ``start`` row), not when it was dispatched.

``StartView`` turns a log's rows into the rows a fairness tally reads (fairness.py): an
``arrive`` stays an arrival, a ``start`` becomes the service of its request, charged what
its dispatch was charged, and a request that ends without a start row (it failed, its
client left, or its engine never said) leaves the queue uncharged, like a cancel. A user is
then backlogged from a request's arrival to its start: while it waits in the scheduler's
queue or in the engine's. The worst gap over these rows is the service-gap measure of §3.2
over engine starts.

Requests that start at one instant started together (an engine admits a batch at once): they
count as started in the order they were dispatched, whatever order their start rows come in. A
replay writes them so; a proxy's stream has them in the order it learned of them, which the
network decides.

It also counts the pairs of requests of two users that started in another order than they
were dispatched. An engine with a FCFS queue starts requests in the order they reach it, so
behind one such engine the count stays near 0 even when its queue undoes the scheduler's
work: with more slots than the engine runs at once, the scheduler has no queue and makes
no choice, and the engine serves by arrival; the worst gap at engine start shows that.
Requests sent to several engines pass each other as the engines free their places.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass

from sfqtui.core.log.rows import LogRows


@dataclass(frozen=True)
class Passing:
    """How often requests of one user started before requests of another dispatched before them."""

    pairs: int  # pairs of requests of two users that started in the other order than they were dispatched
    ahead: str | None  # the pair of users with the most of them: whose request started first...
    behind: str | None  # ... and whose earlier one it passed
    worst: int  # how many times

    def as_dict(self) -> dict[str, object]:
        return {"pairs": self.pairs, "worst": None if self.ahead is None else {"ahead": self.ahead, "behind": self.behind, "pairs": self.worst}}


class _OrderCount:
    """Requests dispatched and not yet started, per user, by dispatch number (ascending: each
    user's are dispatched in order); at each start, every earlier request of another user
    still waiting has been passed."""

    def __init__(self) -> None:
        self.waiting: dict[str, list[int]] = {}
        self.passed: Counter[tuple[str, str]] = Counter()

    def add(self, user: str, key: int) -> None:
        self.waiting.setdefault(user, []).append(key)

    def remove(self, user: str, key: int) -> None:
        keys = self.waiting[user]
        del keys[bisect_left(keys, key)]
        if not keys:
            del self.waiting[user]

    def start(self, user: str, key: int) -> None:
        self.remove(user, key)
        for other, keys in self.waiting.items():
            if other != user and keys[0] < key:
                self.passed[user, other] += bisect_left(keys, key)

    def passing(self) -> Passing:
        worst = max(self.passed.items(), key=lambda item: (item[1], item[0]), default=None)
        if worst is None:
            return Passing(0, None, None, 0)
        (ahead, behind), times = worst
        return Passing(sum(self.passed.values()), ahead, behind, times)


class _Rows:
    """The rows a tally reads, gathered until taken."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.kind: list[str] = []
        self.user: list[str | None] = []
        self.rid: list[Hashable | None] = []
        self.cost: list[float | None] = []

    def add(self, t: float, kind: str, user: str, rid: Hashable, cost: float | None) -> None:
        self.t.append(t)
        self.kind.append(kind)
        self.user.append(user)
        self.rid.append(rid)
        self.cost.append(cost)

    def taken(self, scheduler: str) -> LogRows:
        nothing: list[float | None] = [None] * len(self.kind)
        rows = LogRows(scheduler, range(len(self.kind)), self.t, self.kind, self.user, self.rid, self.cost, nothing, nothing, nothing)
        self.t, self.kind, self.user, self.rid, self.cost = [], [], [], [], []  # the lists given away belong to the rows
        return rows


@dataclass(frozen=True)
class _Dispatched:
    cost: float
    number: int  # its dispatch's, counting from 0


class StartView:
    """Converts a log, chunk by chunk, into the rows of its engine starts (module doc); ``flush``
    hands over the starts still held once the log has no more rows."""

    def __init__(self) -> None:
        self.starts = 0
        self._dispatches = 0
        self._waiting: dict[Hashable, _Dispatched] = {}  # dispatched, not started
        self._order = _OrderCount()
        self._tied: list[tuple[int, str, Hashable, float]] = []  # the latest starts at one instant: (dispatch number, user, id, cost)
        self._tied_t = 0.0
        self._out = _Rows()

    def convert(self, rows: LogRows) -> LogRows:
        out = self._out
        t_out, kind_out, user_out, rid_out, cost_out = out.t, out.kind, out.user, out.rid, out.cost  # out.add written out: once a row
        for k, (kind, user, rid) in enumerate(zip(rows.kind, rows.user, rows.request_id)):
            if user is None or rid is None:
                continue
            if kind == "start":
                found = self._waiting.pop(rid, None)
                if found is None:  # a start of a request not seen dispatched (a log joined late)
                    continue
                self.starts += 1
                if self._tied and rows.t[k] != self._tied_t:
                    self._release()
                self._tied.append((found.number, user, rid, found.cost))
                self._tied_t = rows.t[k]
                continue
            if self._tied:
                self._release()
            if kind == "dispatch":
                self._waiting[rid] = _Dispatched(rows.cost[k] or 0.0, self._dispatches)
                self._order.add(user, self._dispatches)
                self._dispatches += 1
                continue
            if kind in ("complete", "cancel"):
                found = self._waiting.pop(rid, None)
                if kind == "complete" and found is None:
                    continue  # it started: already served
                if found is not None:
                    self._order.remove(user, found.number)
                kind, cost = "cancel", None
            elif kind == "arrive":
                cost = None
            else:
                continue
            t_out.append(rows.t[k])
            kind_out.append(kind)
            user_out.append(user)
            rid_out.append(rid)
            cost_out.append(cost)
        return out.taken(rows.scheduler)

    def flush(self, scheduler: str) -> LogRows:
        """The starts still held (the log's last instant's)."""
        if self._tied:
            self._release()
        return self._out.taken(scheduler)

    def _release(self) -> None:
        """The starts held at one instant, served in the order they were dispatched."""
        self._tied.sort()
        for number, user, rid, cost in self._tied:
            self._order.start(user, number)
            self._out.add(self._tied_t, "dispatch", user, rid, cost)
        self._tied.clear()

    def out_of_dispatch_order(self) -> Passing:
        return self._order.passing()
