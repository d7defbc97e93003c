"""The calibration measures of semantics §10, rebuilt from a loaded event log alone.

`calibration.calibrate` measures while it replays a trace; the dashboard only has the
log (the views render state rebuilt from it), which records per dispatch the charged
cost, the estimated output and the ratio that priced it, and per request the actual
output. The log has no input tokens, but a dispatch's charge is
a * input_tokens + b * est_output, so its actual cost a * input_tokens + b * output is
``cost + b * (output - est_output)``: equal to `calibrate`'s figure up to rounding.

A log that does not record the estimator's settings (a live stream's: the proxy does not
send them) cannot turn charges into costs, but its dispatches still carry the estimated
output and its completions the actual one, and those are what the estimator gets wrong
(the input part of a charge is exact): it is then measured in output tokens, estimated
against actual, per user, over the requests completed so far.

Limits of the log: it has no scope key column. Under scope ``user`` the dispatch's user
is its key; under scope ``model`` every model's ratios are binned together (one series).
It has no ``max_tokens`` either, so the ideal ratio of a key (sum of output over sum of
max_tokens) uses max_tokens = est_output / ratio.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sfqtui.core.analysis.user_costs import UserCalibration, UserCosts
from sfqtui.core.log.table import EventTable
from sfqtui.core.numbers import amount, count
from sfqtui.errors import InputError

NO_OUTPUTS = "calibration needs a trace with output_tokens; this log has none"
# actual / estimated output, in bins around the powers of two from 1/16 to 16
OUTPUT_BIN_LABELS = ("≤1/16", "1/8", "1/4", "1/2", "1", "2", "4", "8", "≥16")
_OUTPUT_EDGES = [2.0 ** (j + 0.5) for j in range(-4, 4)]
_EXACT = OUTPUT_BIN_LABELS.index("1")


@dataclass(frozen=True)
class RatioSeries:
    """One scope key's mean pricing ratio per time bin (None: nothing priced in the bin),
    and the ratio a perfect learner would find over its dispatches."""

    key: str
    means: list[float | None]
    ideal: float | None


@dataclass(frozen=True)
class LogCalibration:
    estimator: Mapping[str, Any]  # the settings the log recorded ({}: none)
    unit: str  # what charged and actual count: "cost", or "output tokens" when the settings are not recorded
    dispatches: int
    unmeasured: int  # dispatches without an actual output (or without a recorded estimate)
    users: list[UserCalibration]  # worst bias first (furthest from 1 either way); dispatched counts those with a known actual cost
    ratio_scope: str  # how the ratios are binned: "global", "user", "model" (all models together) or "unknown" (all together)
    edges: list[float]  # time bin edges of the ratio series, one more than the bins
    ratios: list[RatioSeries]  # in the order of ``users``; empty when no ratio priced anything
    output_bins: list[int]  # dispatches per OUTPUT_BIN_LABELS bin of actual / estimated output
    user_output_bins: dict[str, list[int]]


@dataclass(frozen=True)
class UserMove:
    """How a user's requests fared in another run of the same trace: the mean change of
    their dispatch position (< 0: earlier) and of their wait in seconds."""

    user: str
    requests: int
    position: float
    wait: float


@dataclass(frozen=True)
class OrderChange:
    compared: int  # dispatch positions both runs reached
    changed: int  # of them, how many sent another request
    first: int | None  # the first that did
    moves: list[UserMove]  # most moved up (earlier) first


def estimator_label(settings: Mapping[str, Any]) -> str:
    """An estimator's settings in a few words, e.g. "ratio per user, window 1,000"."""
    if not settings:
        return "settings not recorded"
    if settings.get("oracle"):
        return "oracle"
    scope = settings.get("scope", "global")
    update = settings.get("update", "window")
    rule = {"window": f"window {count(settings.get('window'))}", "ema": f"ema α {amount(settings.get('alpha'))}"}.get(update, update)
    return f"ratio {'global' if scope == 'global' else 'per ' + scope}, {rule}"


def calibrate_log(table: EventTable, metadata: Mapping[str, Any], bins: int = 40, worst: int = 2) -> LogCalibration:
    """The §10 measures over the dispatches loaded so far; ``bins`` time bins for the ratio
    series, output histograms for the ``worst`` most biased users. Raises ValueError, with
    a message for people, when the log cannot be calibrated."""
    if table.traits is not None and table.traits.charges == "actual":
        raise InputError(f"{table.scheduler} charges actual usage after the fact: it has no estimate to calibrate")
    source = metadata.get("cost_source")
    output_weight: float | None
    if source == "column":
        raise InputError("this log's costs come from the trace's cost column: there is no estimator to calibrate")
    if source == "oracle":
        # its estimate is the actual output, so there is nothing to correct (its logs record no weights)
        settings: Mapping[str, Any] = metadata.get("estimator") or {"oracle": True}
        output_weight = 0.0
    else:
        settings = metadata.get("estimator") or {}
        output_weight = float(settings["output_weight"]) if "output_weight" in settings else None
    tokens = output_weight is None  # measured in output tokens: estimated against actual
    per_user = settings.get("scope", "global") == "user"
    dispatches = _loaded_dispatches(table)
    n = len(dispatches)
    if not n:
        raise InputError(NO_OUTPUTS)
    user, req, t, output = table.user, table.req, table.t, table.output
    users = len(table.users)
    bins_per_user = len(OUTPUT_BIN_LABELS)
    measured_user, charged, consumed = array("q"), array("d"), array("d")  # per measured dispatch
    histogram = [0] * (users * bins_per_user)
    # the ratio series: per key (the user under scope "user", else one) and time bin
    keys = users if per_user else 1
    first_t, last_t = t[dispatches[0]], t[dispatches[-1]]
    per_second = bins / (last_t - first_t) if last_t > first_t else 0.0
    ratio_sum, ratio_count = [0.0] * (keys * bins), [0] * (keys * bins)
    output_sum, cap_sum = [0.0] * keys, [0.0] * keys
    key_of_user = 1 if per_user else 0
    edges = _OUTPUT_EDGES
    # one pass in plain loops: a million dispatches take about a second
    for k, c, e, r in zip(dispatches, table.cost[:n], table.est_output[:n], table.ratio[:n]):
        u = user[k]
        o = output[req[k]]
        if r == r:
            key = u * key_of_user
            time_bin = int((t[k] - first_t) * per_second)
            cell = key * bins + (time_bin if time_bin < bins else bins - 1)
            ratio_sum[cell] += r
            ratio_count[cell] += 1
            if o == o and r > 0:
                output_sum[key] += o
                cap_sum[key] += e / r
        if o != o or e != e:
            continue
        measured_user.append(u)
        if output_weight is None:
            charged.append(e)
            consumed.append(o)
        else:
            charged.append(c)
            consumed.append(c + output_weight * (o - e))
        if e > 0:
            histogram[u * bins_per_user + bisect_right(edges, o / e)] += 1
        else:
            histogram[u * bins_per_user + (_EXACT if o <= 0 else bins_per_user - 1)] += 1
    measured = len(measured_user)
    if not measured:
        raise InputError(NO_OUTPUTS)
    costs = UserCosts(users)
    costs.feed(measured_user, charged, consumed)
    by_bias = costs.users(table.users)
    series = []
    for key in range(keys):
        cells = range(key * bins, (key + 1) * bins)
        if any(ratio_count[c] for c in cells):
            series.append(RatioSeries(table.users[key] if per_user else "global" if settings else "all users",
                                      [ratio_sum[c] / ratio_count[c] if ratio_count[c] else None for c in cells],
                                      output_sum[key] / cap_sum[key] if cap_sum[key] else None))
    rank = {user.user: i for i, user in enumerate(by_bias)}
    series.sort(key=lambda x: rank.get(x.key, len(rank)))
    worst_bins = {}
    for x in by_bias[:worst]:
        start = table.user_code[x.user] * bins_per_user
        worst_bins[x.user] = histogram[start:start + bins_per_user]
    width = (last_t - first_t) / bins
    scope = settings.get("scope", "global" if settings else "unknown")
    return LogCalibration(
        settings, "output tokens" if tokens else "cost", n, n - measured, by_bias,
        scope if scope in ("user", "model", "unknown") else "global",
        [first_t + width * j for j in range(bins + 1)] if series else [], series,
        [sum(histogram[u * bins_per_user + j] for u in range(users)) for j in range(bins_per_user)],
        worst_bins)


def _loaded_dispatches(table: EventTable) -> array:
    """The event indices of the dispatches below ``size``: every column is complete there,
    while the loader may be appending beyond it."""
    return table.dispatches[: bisect_left(table.dispatches, table.size)]


def order_change(a: EventTable, b: EventTable) -> OrderChange:
    """How run ``b`` of the same trace dispatched differently from run ``a``: the positions
    that sent another request, and per user how much earlier or later its requests went."""
    a_dispatches, b_dispatches = _loaded_dispatches(a), _loaded_dispatches(b)
    a_req, b_req = a.req, b.req
    sent_by_a = [a_req[k] for k in a_dispatches]
    position_in_a = array("q", [-1]) * len(a.arrive_at)
    for n, req in enumerate(sent_by_a):
        position_in_a[req] = n
    compared = min(len(a_dispatches), len(b_dispatches))
    changed, first = 0, None
    a_t, a_arrive, b_t, b_arrive, b_user = a.t, a.arrive_at, b.t, b.arrive_at, b.user
    # per user code of b: requests, sum of position changes, sum of wait changes
    requests, positions, waits = [0] * len(b.users), [0] * len(b.users), [0.0] * len(b.users)
    for n, k in enumerate(b_dispatches):
        req = b_req[k]
        was = position_in_a[req] if req < len(position_in_a) else -1
        if was != n and n < compared:
            changed += 1
            if first is None:
                first = n
        if was < 0:
            continue
        u = b_user[k]
        requests[u] += 1
        positions[u] += n - was
        arrived_a, arrived_b = a_arrive[req], b_arrive[req]
        waits[u] += ((b_t[k] - b_t[arrived_b]) if arrived_b >= 0 else 0.0) - ((a_t[a_dispatches[was]] - a_t[arrived_a]) if arrived_a >= 0 else 0.0)
    moves = sorted((UserMove(b.users[u], requests[u], positions[u] / requests[u], waits[u] / requests[u])
                    for u in range(len(b.users)) if requests[u]), key=lambda x: (x.position, x.user))
    return OrderChange(compared, changed, first, moves)
