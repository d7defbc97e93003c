"""The calibration measures of semantics §10: how far the cost estimator is off, and whom it favours.

- Per user, over its dispatched requests that carry ``output_tokens``: the charged cost,
  the actual cost a * input_tokens + b * output_tokens, ``bias = charged / actual``, and
  its share of each total. A user whose share of actual cost exceeds its share of
  charged cost gains from the estimator's errors.
- Per ratio scope key (``global``, a model or a user): the ratio that priced its
  dispatches over time (in equal time bins), its final learned value, and the ratio a
  perfect learner would find (sum of output over sum of max_tokens of the key's requests).
- The worst service gap between continuously backlogged users measured in actual cost:
  SFQ bounds the gap in charged cost (article §8), so what exceeds it is the estimator's.

Everything is computed chunk by chunk as the replay goes, like `compare`'s figures. The
oracle estimator (``EstimatorParams(oracle=True)``) charges the actual cost at dispatch;
its bias is 1 for every user.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

from sfqtui.core.analysis.fairness import FairnessTally, Gap
from sfqtui.core.analysis.user_costs import UserCalibration, UserCosts
from sfqtui.core.events import DISPATCH, EventColumns
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError

RATIO_BINS = 40
NO_MODEL = "(no model)"


@dataclass(frozen=True)
class GapFigure:
    """The worst |W_i - W_j| found, and whether the search was exhaustive (fairness.PAIR_BUDGET)."""

    gap: Gap | None
    exact: bool

    def as_dict(self) -> dict[str, object] | None:
        gap = self.gap
        if gap is None:
            return None
        return {"gap": gap.gap, "ahead": gap.ahead, "behind": gap.behind, "start_t": gap.start_t, "end_t": gap.end_t, "exact": self.exact}


@dataclass(frozen=True)
class RatioTrack:
    """One scope key's ratio over time: (t, ratio) of its first priced dispatch and of the last
    one in each time bin; its final learned value and the ideal (its sum of output / sum of max_tokens)."""

    key: str
    samples: list[tuple[float, float]]
    final: float
    actual: float | None

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "final": self.final, "actual": self.actual,
                "over_time": [{"t": t, "ratio": r} for t, r in self.samples]}


@dataclass(frozen=True)
class CalibrationReport:
    """The measures of one replay. ``as_dict`` leaves out the two gaps: a caller reports
    them next to other runs' gaps (the oracle's, vtc's)."""

    scheduler: str
    slots: int
    estimator: EstimatorParams
    cost_source: str
    users: list[UserCalibration]  # worst bias first (furthest from 1 either way)
    ratios: list[RatioTrack]  # empty when no ratio priced anything (oracle, cost column)
    gap_charged: GapFigure
    gap_actual: GapFigure
    unmeasured: int  # dispatched requests without output_tokens, left out of the per-user figures

    def as_dict(self) -> dict[str, object]:
        p = self.estimator
        return {
            "scheduler": self.scheduler,
            "slots": self.slots,
            "cost_source": self.cost_source,
            "estimator": p.as_dict(),
            "ratio": {"scope": p.scope, "update": p.update, "keys": [track.as_dict() for track in self.ratios]},
            "users": [u.as_dict() for u in self.users],
            "unmeasured_requests": self.unmeasured,
        }


def actual_costs(trace: Trace, params: EstimatorParams) -> array:
    """a * input_tokens + b * output_tokens per request, NaN where the output is unknown.

    Evaluated exactly as the oracle prices a request, so the oracle's bias is exactly 1.
    """
    if trace.input_tokens is None or trace.output_tokens is None:
        raise InputError("calibration needs the input_tokens and output_tokens columns: actual cost is "
                         "a * input_tokens + b * output_tokens (semantics §10)")
    a, b = params.input_weight, params.output_weight
    return array("d", (a * max(0, n_in) + b * out if out >= 0 else math.nan
                       for n_in, out in zip(trace.input_tokens, trace.output_tokens)))


def calibrate(trace: Trace, config: ReplayConfig) -> CalibrationReport:
    """Replay ``trace`` under ``config`` and measure its estimator against the actual outputs."""
    actual = actual_costs(trace, config.estimator)
    run = Replay(trace, config)
    if run.traits.charges == "actual":
        raise InputError(f"{config.scheduler} charges actual usage: it has no estimate to calibrate")
    charged_gaps, actual_gaps = FairnessTally(trace.weights), FairnessTally(trace.weights)
    costs = _CostTotals(trace, actual)
    priced = _PricedDispatches(trace, config.estimator.scope)
    for columns, _ in run.chunks():
        rows = rows_from_replay(columns, trace, config.scheduler)
        charged_gaps.feed(rows)
        actual_gaps.feed(_in_actual_cost(rows, columns, actual))
        costs.feed(columns)
        priced.feed(columns)
    learned = run.estimator.ratios() if run.estimator is not None else {}
    return CalibrationReport(
        config.scheduler, config.slots, config.estimator, run.cost_source, costs.per_user.users(trace.users), priced.tracks(learned, config.estimator),
        _gap_figure(charged_gaps, config.scheduler), _gap_figure(actual_gaps, config.scheduler), costs.unmeasured)


def worst_gap_in_actual_cost(trace: Trace, config: ReplayConfig) -> GapFigure:
    """Replay ``trace`` under ``config`` (any scheduler) and find its worst gap in actual cost."""
    actual = actual_costs(trace, config.estimator)
    gaps = FairnessTally(trace.weights)
    for columns, _ in Replay(trace, config).chunks():
        gaps.feed(_in_actual_cost(rows_from_replay(columns, trace, config.scheduler), columns, actual))
    return _gap_figure(gaps, config.scheduler)


def _gap_figure(tally: FairnessTally, scheduler: str) -> GapFigure:
    report = tally.report(scheduler)
    return GapFigure(report.worst_gap, report.gap_exact)


def _in_actual_cost(rows: LogRows, columns: EventColumns, actual: Sequence[float]) -> LogRows:
    """The rows with each dispatch's cost replaced by its request's actual cost (its charged
    cost when the output is unknown)."""
    cost = [(cost if math.isnan(actual[req]) else actual[req]) if kind == DISPATCH else cost
            for kind, req, cost in zip(columns.kind, columns.req, columns.cost)]
    return replace(rows, cost=cost)


class _CostTotals:
    """The measured dispatches' (user, charged, actual) fed to UserCosts, chunk by chunk;
    those whose output is unknown are counted apart."""

    def __init__(self, trace: Trace, actual: Sequence[float]) -> None:
        self.trace = trace
        self.actual = actual
        self.per_user = UserCosts(len(trace.users))
        self.unmeasured = 0

    def feed(self, columns: EventColumns) -> None:
        codes, actual = self.trace.user, self.actual
        users, charged, consumed = array("q"), array("d"), array("d")
        for kind, req, cost in zip(columns.kind, columns.req, columns.cost):
            if kind != DISPATCH:
                continue
            if math.isnan(actual[req]):
                self.unmeasured += 1
                continue
            users.append(codes[req])
            charged.append(cost)  # type: ignore[arg-type]  # every dispatch row has a cost
            consumed.append(actual[req])
        self.per_user.feed(users, charged, consumed)


class _PricedDispatches:
    """The time, scope key and ratio of every dispatch a ratio priced, in typed arrays."""

    def __init__(self, trace: Trace, scope: str) -> None:
        self.trace = trace
        self.keys: Sequence[int] | None = trace.user if scope == "user" else trace.model if scope == "model" else None
        self.scope = scope if self.keys is not None else "global"
        self.t = array("d")
        self.key = array("q")
        self.ratio = array("d")

    def feed(self, columns: EventColumns) -> None:
        if columns.ratio is None:
            return
        keys = self.keys
        for t, req, ratio in zip(columns.t, columns.req, columns.ratio):
            if ratio is not None:
                self.t.append(t)
                self.key.append(keys[req] if keys is not None else 0)
                self.ratio.append(ratio)

    def tracks(self, learned: dict[Hashable, float], params: EstimatorParams) -> list[RatioTrack]:
        if not self.t:
            return []
        start, end = self.t[0], self.t[-1]
        width = (end - start) / RATIO_BINS or 1.0
        first: dict[int, tuple[float, float]] = {}
        last_in_bin: dict[int, dict[int, tuple[float, float]]] = {}
        for t, key, ratio in zip(self.t, self.key, self.ratio):
            first.setdefault(key, (t, ratio))
            last_in_bin.setdefault(key, {})[min(RATIO_BINS - 1, int((t - start) / width))] = (t, ratio)
        ideal = self._ideal_ratios()
        tracks = [
            RatioTrack(self._name(key), _with_first(first[key], [bins[b] for b in sorted(bins)]),
                       learned.get(self._estimator_key(key), params.start_ratio), ideal.get(key))
            for key, bins in last_in_bin.items()
        ]
        return sorted(tracks, key=lambda track: track.key)

    def _ideal_ratios(self) -> dict[int, float]:
        """Per key, sum(output) / sum(max_tokens) over its requests that carry both."""
        trace, keys = self.trace, self.keys
        outputs: dict[int, int] = {}
        caps: dict[int, int] = {}
        if trace.max_tokens is not None and trace.output_tokens is not None:
            for req, (cap, out) in enumerate(zip(trace.max_tokens, trace.output_tokens)):
                if cap > 0 and out >= 0:
                    key = keys[req] if keys is not None else 0
                    outputs[key] = outputs.get(key, 0) + out
                    caps[key] = caps.get(key, 0) + cap
        return {key: outputs[key] / caps[key] for key in caps}

    def _estimator_key(self, key: int) -> Hashable:
        """The key the estimator keeps this ratio under (None: the global ratio)."""
        return key if self.keys is not None else None

    def _name(self, key: int) -> str:
        if self.scope == "user":
            return self.trace.users[key]
        if self.scope == "model":
            return self.trace.models[key] if key >= 0 else NO_MODEL
        return "global"


def _with_first(first: tuple[float, float], samples: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The bins keep the last dispatch of each; the first shows the start value (the warm-up)."""
    return samples if samples[0] == first else [first, *samples]
