"""Prometheus metrics of the proxy's scheduler, with a bounded number of user labels.

The ``max_users`` users with the most cost dispatched so far get their own ``user``
label; everyone else is summed under ``user="other"`` (for the meter lead, the largest
among them). Labels are re-chosen right after each scrape, so every increment is
exported under the label it was counted with; a user that loses its label loses its
series, and one that gains a label starts a new series from 0, which Prometheus'
``rate`` and ``increase`` read as a counter reset.

Counters count this process's own requests; the scheduler's gauges (queues, meters, in
flight) read the state, which for a group replica (``--state``) is the group's, from the
store (while the store is away, the replica's own local SFQ). A gauge whose value the state
does not give is left out, so that a scrape never fails and never shows a made-up value.
The fairness gauge is Jain's index over the last ``JAIN_WINDOW`` dispatches (the group's,
for a replica), each user judged on the dispatches at which it was waiting (fairness_window.py). No ``_created`` series.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sfqtui.errors import InputError
from sfqtui.protocol import GLOBAL, Event, ProxyState, UpstreamLimit, UpstreamPlacement, UserState
from sfqtui.proxy.dispatcher import Ticket
from sfqtui.proxy.fairness_window import JAIN_WINDOW, FairnessWindow

disable_created_metrics()
OTHER = "other"
UNKNOWN = "unknown"  # the user of a request refused before its key was known
OUTCOMES = ("answered", "failed", "cancelled", "refused")
WAIT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
FIRST_BYTE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
State = Callable[[], ProxyState]
JAIN_HELP = (f"Jain's fairness index, (sum x)^2 / (n sum x^2), over the last {JAIN_WINDOW:,} dispatches and the n users that waited "
             "at some of them, x being the cost per weight a user was dispatched over its share of the dispatches at which it waited "
             "(at most 1): 1 when every waiting user got its share, lower as waiting users get less. Absent before a dispatch.")
_STATE_GAUGES = (
    ("sfqtui_virtual_time", "v", "SFQ virtual time v."),
    ("sfqtui_inflight", "inflight", "Requests holding a slot (a group replica: the group's)."),
    ("sfqtui_slots", "slots", "Slots (requests sent upstream at once)."),
)


class _SchedulerGauges(Collector):
    """Gauges read from the scheduler's state at scrape time."""

    def __init__(self, metrics: ProxyMetrics, state: State) -> None:
        self._metrics = metrics
        self._state = state

    def collect(self) -> Iterator[Metric]:
        """Every gauge whose value the state gives; one it does not give is left out, never made up."""
        state = self._state()
        v = state.get("v")
        users = state.get("users")
        if isinstance(users, list):
            yield from self._queues(users, v)
        for name, key, text in _STATE_GAUGES:
            value = state.get(key)
            if isinstance(value, (int, float)):
                yield GaugeMetricFamily(name, text, value=value)
        limits = state.get("limits")
        if limits is not None:
            yield from self._limits(limits)
        placement = state.get("placement")
        if placement is not None:
            yield from self._placement(placement)
        jain = self._metrics.fairness.jain()
        if jain is not None:
            yield GaugeMetricFamily("sfqtui_jain_index", JAIN_HELP, value=jain)
        bound = state.get("bound")
        if bound is not None:
            yield GaugeMetricFamily("sfqtui_global_bound", "1 while the group's SFQ bound holds; 0 while this replica serves on its own "
                                    "(store away), its other gauges then being its own local SFQ's.", value=1.0 if bound == GLOBAL else 0.0)
            if isinstance(state.get("bound_since"), (int, float)):
                yield GaugeMetricFamily("sfqtui_bound_since_timestamp_seconds", "When the bound last changed (Unix time).", value=state["bound_since"])
            if bound == GLOBAL and isinstance(state.get("replicas"), int):  # a suspended replica does not know the group's size
                yield GaugeMetricFamily("sfqtui_replicas", "Replicas in the group (absent while the bound is suspended).", value=state["replicas"])

    @staticmethod
    def _limits(limits: list[UpstreamLimit]) -> Iterator[Metric]:
        """--slots auto: each upstream's limit and maximum, and what its engine's metrics said last."""
        limit = GaugeMetricFamily("sfqtui_upstream_limit", "Requests this proxy sends the upstream at once (--slots auto: follows "
                                  "its engine; the slots are their sum).", labels=["upstream"])
        maximum = GaugeMetricFamily("sfqtui_upstream_limit_maximum", "The most the upstream's limit may grow to (auto:MAX).", labels=["upstream"])
        waiting = GaugeMetricFamily("sfqtui_upstream_engine_waiting", "Requests waiting in the upstream engine's own queue, as its "
                                    "metrics said last (absent: not read, or not exported).", labels=["upstream"])
        for row in limits:
            limit.add_metric([row["upstream"]], row["limit"])
            maximum.add_metric([row["upstream"]], row["maximum"])
            if row["waiting"] is not None:
                waiting.add_metric([row["upstream"]], row["waiting"])
        yield from (limit, maximum, waiting)

    @staticmethod
    def _placement(placement: list[UpstreamPlacement]) -> Iterator[Metric]:
        """--placement prefix: each upstream's placed prompt tokens, and those the index predicted it held."""
        looked = CounterMetricFamily("sfqtui_upstream_prefix_prompt_tokens", "--placement prefix: prompt tokens (whole blocks) of the "
                                     "requests sent to the upstream.", labels=["upstream"])
        predicted = CounterMetricFamily("sfqtui_upstream_prefix_predicted_cached_tokens", "--placement prefix: of those, the tokens the "
                                        "proxy's index said the upstream held (compare vllm:prefix_cache_hits).", labels=["upstream"])
        for row in placement:
            looked.add_metric([row["upstream"]], row["prompt_tokens"])
            predicted.add_metric([row["upstream"]], row["predicted_cached_tokens"])
        yield from (looked, predicted)

    def _queues(self, users: list[UserState], v: float | None) -> Iterator[Metric]:
        depth = GaugeMetricFamily("sfqtui_queue_depth", "Requests waiting in the user's queue.", labels=["user"])
        lead = GaugeMetricFamily("sfqtui_meter_lead", "The user's meter minus the virtual time, S_i - v (other: the largest).", labels=["user"])
        depths: Tally[str] = Tally()
        leads: dict[str, float] = {}
        for entry in users:
            label = self._metrics.label(entry["user"])
            depths[label] += entry["queued"]
            if entry["meter"] is not None and v is not None:
                ahead = entry["meter"] - v
                leads[label] = max(leads.get(label, ahead), ahead)
        for label in sorted(depths):
            depth.add_metric([label], depths[label])
        for label in sorted(leads):
            lead.add_metric([label], leads[label])
        yield depth
        yield lead
        if v is not None:
            yield GaugeMetricFamily("sfqtui_worst_meter_lead", "The largest S_i - v over all users: how far ahead the most served user is.",
                                    value=max(leads.values(), default=0.0))
        yield GaugeMetricFamily("sfqtui_queued", "Requests waiting (a group replica: the group's).", value=sum(depths.values()))


class ProxyMetrics:
    def __init__(self, max_users: int, state: State, in_group: bool = False) -> None:
        if max_users < 1:
            raise InputError("--metrics-users must be >= 1")
        self.max_users = max_users
        self.registry = CollectorRegistry()
        self._cost = Counter("sfqtui_dispatched_cost", "Cost charged at dispatch (semantics §6), by user.", ["user"], registry=self.registry)
        self._wait = Histogram("sfqtui_wait_seconds", "Seconds from arrival to dispatch, by user.", ["user"], buckets=WAIT_BUCKETS, registry=self.registry)
        self._requests = Counter("sfqtui_requests", "Completion requests by user and outcome: answered (the upstream's answer, "
                                 "4xx included), failed (upstream unreachable, 5xx, timeout, broken stream), cancelled (the client "
                                 "left, or shutdown), refused (bad key or body, or shutting down).", ["user", "outcome"], registry=self.registry)
        self._upstream_errors = Counter("sfqtui_upstream_errors", "Upstream failures by upstream and code.", ["upstream", "code"], registry=self.registry)
        self._first_byte = Histogram("sfqtui_upstream_first_byte_seconds", "Seconds from sending a request upstream to its status and headers.",
                                     ["upstream"], buckets=FIRST_BYTE_BUCKETS, registry=self.registry)
        self._store_rtt = Histogram("sfqtui_store_seconds", "Round trip of a script call to the group's store.", buckets=STORE_BUCKETS,
                                    registry=self.registry if in_group else None)
        self.fairness = FairnessWindow()
        self.registry.register(_SchedulerGauges(self, state))
        self._total_cost: dict[str, float] = {}
        self._labelled: set[str] = set()

    def label(self, user: str) -> str:
        return user if user in self._labelled else OTHER

    def see(self, event: Event, ticket: Ticket | None) -> None:
        """A lone proxy's dispatcher sink: count dispatches."""
        self.fairness.see(event)
        if event["kind"] != "dispatch" or ticket is None:
            return
        self.count_dispatch(ticket.user, event["cost"] or 0.0, event["t"] - ticket.arrived_t)

    def count_dispatch(self, user: str, cost: float, wait_s: float) -> None:
        """One of this process's requests was dispatched, charged ``cost`` after waiting ``wait_s``."""
        if user not in self._labelled and len(self._labelled) < self.max_users:
            self._labelled.add(user)
        label = self.label(user)
        self._cost.labels(label).inc(cost)
        self._wait.labels(label).observe(wait_s)
        self._total_cost[user] = self._total_cost.get(user, 0.0) + cost

    def ended(self, user: str | None, outcome: str) -> None:
        """A completion request is over (or was refused)."""
        self._requests.labels(UNKNOWN if user is None else self.label(user), outcome).inc()

    def upstream_answered(self, upstream: str, seconds: float) -> None:
        self._first_byte.labels(upstream).observe(seconds)

    def upstream_failed(self, upstream: str, code: str) -> None:
        self._upstream_errors.labels(upstream, code).inc()

    def store_call(self, seconds: float) -> None:
        self._store_rtt.observe(seconds)

    def render(self) -> bytes:
        """The Prometheus text exposition; then the labels are re-chosen for the next scrape."""
        text = generate_latest(self.registry)
        self._relabel()
        return text

    def _relabel(self) -> None:
        busiest = {user for user, _ in sorted(self._total_cost.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_users]}
        for user in self._labelled - busiest:
            self._cost.remove(user)
            self._wait.remove(user)
            for outcome in OUTCOMES:
                try:
                    self._requests.remove(user, outcome)
                except KeyError:
                    pass
        for user in busiest - self._labelled:
            self._cost.labels(user)
            self._wait.labels(user)
        self._labelled = busiest
