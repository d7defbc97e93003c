"""The fairness figures of `sfqtui compare`, computed from any scheduler's event log.

- share: each user's fraction of the cost charged at congested dispatches (at least two
  users backlogged when the pick was made).
- worst gap: the largest |W_i - W_j| over intervals in which both i and j stay
  backlogged (the article's §3.2 quantity), exact.
- Jain's index over each user's charge (c / w) per congested dispatch it was backlogged
  for: 1.0 when every backlogged user progresses at the same weighted rate.
- wait p50 / p99 per user: dispatch time minus arrival time.

The worst gap uses a reference f that advances at each dispatch by the charge divided by
the total weight backlogged (the progress of a fair fluid share). With y_i = C_i - f,
W_i - W_j = Δy_i - Δy_j, so an episode's largest rise plus another's largest drop bounds
every pair; pairs are then computed exactly from the largest bounds down until no bound
can beat the best gap found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from sfqtui.core.analysis.gaps import History, max_gain
from sfqtui.core.engine.replay import Replay, ReplayConfig
from sfqtui.core.engine.trace import Trace
from sfqtui.core.log.rows import LogRows, rows_from_replay

PAIR_BUDGET = 50_000


@dataclass(frozen=True)
class Gap:
    ahead: str
    behind: str
    start_t: float
    end_t: float
    gap: float


@dataclass
class UserFigures:
    dispatched: int = 0
    charged: float = 0.0
    congested_charged: float = 0.0
    congested_backlogged: int = 0
    waits: list[float] = field(default_factory=list)

    def wait_quantile(self, q: float) -> float | None:
        if not self.waits:
            return None
        ordered = sorted(self.waits)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class FairnessReport:
    scheduler: str
    users: dict[str, UserFigures]
    congested_dispatches: int
    jain: float | None
    worst_gap: Gap | None
    gap_exact: bool

    def share(self, user: str) -> float:
        total = sum(f.congested_charged for f in self.users.values())
        return self.users[user].congested_charged / total if total else 0.0

    def as_dict(self) -> dict[str, object]:
        gap = self.worst_gap
        return {
            "congested_dispatches": self.congested_dispatches,
            "jain": self.jain,
            "worst_gap": None if gap is None else {
                "gap": gap.gap, "ahead": gap.ahead, "behind": gap.behind, "start_t": gap.start_t, "end_t": gap.end_t,
                "exact": self.gap_exact,
            },
            "users": {
                u: {
                    "dispatched": f.dispatched,
                    "charged": f.charged,
                    "share_congested": self.share(u),
                    "wait_p50": f.wait_quantile(0.5),
                    "wait_p99": f.wait_quantile(0.99),
                }
                for u, f in sorted(self.users.items())
            },
        }


@dataclass
class _Episode:
    user: str
    start: int
    end: int
    rise: float = 0.0
    drop: float = 0.0


def fairness(log: LogRows, weights: dict[str, float] | None = None) -> FairnessReport:
    weights = weights or {}
    figures: dict[str, UserFigures] = {}
    arrived: dict[str, float] = {}
    queued: dict[str, int] = {}
    backlogged_weight = 0.0
    reference = 0.0
    congested = 0
    charged: dict[str, float] = {}
    history: History = {}
    open_episodes: dict[str, tuple[_Episode, float, float]] = {}  # episode, running min y, running max y
    episodes: list[_Episode] = []

    def close(user: str, k: int, y_now: float) -> None:
        episode, low, high = open_episodes.pop(user)
        episode.end = k
        episode.drop = max(episode.drop, high - y_now)
        episodes.append(episode)

    for k in range(len(log)):
        kind, user = log.kind[k], log.user[k]
        if user is None:
            continue
        w = weights.get(user, 1.0)
        figure = figures.get(user)
        if figure is None:
            figure = figures[user] = UserFigures()
        if kind == "arrive":
            arrived[log.request_id[k]] = log.t[k]  # type: ignore[index]
            if queued.get(user, 0) == 0:
                backlogged_weight += w
                y = charged.get(user, 0.0) - reference
                open_episodes[user] = (_Episode(user, k, k), y, y)
            queued[user] = queued.get(user, 0) + 1
        elif kind in ("dispatch", "cancel"):
            if kind == "dispatch":
                cost = log.cost[k] or 0.0
                charge = cost / w
                figure.dispatched += 1
                figure.charged += cost
                figure.waits.append(log.t[k] - arrived.pop(log.request_id[k], log.t[k]))  # type: ignore[arg-type]
                if len(open_episodes) >= 2:
                    congested += 1
                    figure.congested_charged += cost
                    for other in open_episodes:
                        figures[other].congested_backlogged += 1
                y_low = charged.get(user, 0.0) - reference
                reference += charge / backlogged_weight if backlogged_weight else 0.0
                total = charged.get(user, 0.0) + charge
                charged[user] = total
                seqs, totals = history.setdefault(user, ([], []))
                seqs.append(k)
                totals.append(total)
                y_high = total - reference
                if user in open_episodes:
                    episode, low, high = open_episodes[user]
                    low = min(low, y_low)
                    episode.drop = max(episode.drop, high - y_low)
                    episode.rise = max(episode.rise, y_high - low)
                    open_episodes[user] = (episode, low, max(high, y_high))
            queued[user] = queued.get(user, 0) - 1
            if queued[user] == 0 and user in open_episodes:
                backlogged_weight -= w
                close(user, k, charged.get(user, 0.0) - reference)
    for user in list(open_episodes):
        close(user, len(log) - 1, charged.get(user, 0.0) - reference)

    worst, exact = _worst_gap(episodes, history, log.t)
    rates = [
        f.congested_charged / weights.get(u, 1.0) / f.congested_backlogged
        for u, f in figures.items()
        if f.congested_backlogged
    ]
    jain = (sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))) if rates and any(rates) else None
    return FairnessReport(log.scheduler, figures, congested, jain, worst, exact)


def _worst_gap(episodes: list[_Episode], history: History, times: Sequence[float]) -> tuple[Gap | None, bool]:
    risers = sorted((e for e in episodes if e.rise > 0), key=lambda e: -e.rise)
    droppers = sorted(episodes, key=lambda e: -e.drop)
    best: tuple[float, str, str, int, int] | None = None
    budget = PAIR_BUDGET
    exact = True
    for a in risers:
        if best is not None and a.rise + (droppers[0].drop if droppers else 0.0) <= best[0]:
            break
        for b in droppers:
            if best is not None and a.rise + b.drop <= best[0]:
                break
            if a.user == b.user or a.end < b.start or b.end < a.start:
                continue
            budget -= 1
            if budget < 0:
                exact = False
                break
            found = max_gain(a.user, b.user, max(a.start, b.start), min(a.end, b.end), history)
            if found is not None and (best is None or found[0] > best[0]):
                best = (found[0], a.user, b.user, found[1], found[2])
        if budget < 0:
            break
    if best is None:
        return None, exact
    return Gap(best[1], best[2], times[best[3]], times[best[4]], best[0]), exact


def fairness_of_replay(trace: Trace, config: ReplayConfig, progress: Callable[[int], None] | None = None) -> FairnessReport:
    """Replay ``trace`` under ``config`` and compute its fairness figures (what `compare`
    prints for one scheduler). ``progress`` gets the number of requests arrived so far."""
    run = Replay(trace, config)
    for arrived in run.run():
        if progress is not None:
            progress(arrived)
    return fairness(rows_from_replay(run.log.columns(), trace, config.scheduler), trace.weights)
