"""Prometheus metrics of the proxy's scheduler, with a bounded number of user labels.

The ``max_users`` users with the most cost dispatched so far get their own ``user``
label; everyone else is summed under ``user="other"`` (for the meter lead, the largest
among them). Labels are re-chosen right after each scrape, so every increment is
exported under the label it was counted with; a user that loses its label loses its
series, and one that gains a label starts a new series from 0, which Prometheus'
``rate`` and ``increase`` read as a counter reset.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sfqtui.errors import InputError
from sfqtui.protocol import Event
from sfqtui.proxy.dispatcher import Ticket

OTHER = "other"
WAIT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
State = Callable[[], dict[str, Any]]


class _SchedulerGauges(Collector):
    """Gauges read from the scheduler's state at scrape time."""

    def __init__(self, metrics: ProxyMetrics, state: State) -> None:
        self._metrics = metrics
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        v = state["v"]
        depth = GaugeMetricFamily("sfqtui_queue_depth", "Requests waiting in the user's queue.", labels=["user"])
        lead = GaugeMetricFamily("sfqtui_meter_lead", "The user's meter minus the virtual time, S_i - v (other: the largest).", labels=["user"])
        depths: Tally[str] = Tally()
        leads: dict[str, float] = {}
        for entry in state["users"]:
            label = self._metrics.label(entry["user"])
            depths[label] += entry["queued"]
            if entry["meter"] is not None:
                ahead = entry["meter"] - v
                leads[label] = max(leads.get(label, ahead), ahead)
        for label in sorted(depths):
            depth.add_metric([label], depths[label])
        for label in sorted(leads):
            lead.add_metric([label], leads[label])
        yield depth
        yield lead
        yield GaugeMetricFamily("sfqtui_worst_meter_lead", "The largest S_i - v over all users: how far ahead the most served user is.",
                                value=max(leads.values(), default=0.0))
        yield GaugeMetricFamily("sfqtui_virtual_time", "SFQ virtual time v.", value=v)
        yield GaugeMetricFamily("sfqtui_inflight", "Requests holding a slot.", value=state["inflight"])
        yield GaugeMetricFamily("sfqtui_slots", "Slots (requests sent upstream at once).", value=state["slots"])


class ProxyMetrics:
    def __init__(self, max_users: int, state: State) -> None:
        if max_users < 1:
            raise InputError("--metrics-users must be >= 1")
        self.max_users = max_users
        self.registry = CollectorRegistry()
        self._cost = Counter("sfqtui_dispatched_cost", "Cost charged at dispatch (semantics §6), by user.", ["user"], registry=self.registry)
        self._wait = Histogram("sfqtui_wait_seconds", "Seconds from arrival to dispatch, by user.", ["user"], buckets=WAIT_BUCKETS, registry=self.registry)
        self.registry.register(_SchedulerGauges(self, state))
        self._total_cost: Tally[str] = Tally()
        self._labelled: set[str] = set()

    def label(self, user: str) -> str:
        return user if user in self._labelled else OTHER

    def see(self, event: Event, ticket: Ticket | None) -> None:
        """A dispatcher sink: count dispatches."""
        if event["kind"] != "dispatch" or ticket is None:
            return
        user = ticket.user
        if user not in self._labelled and len(self._labelled) < self.max_users:
            self._labelled.add(user)
        label = self.label(user)
        self._cost.labels(label).inc(event["cost"])
        self._wait.labels(label).observe(event["t"] - ticket.arrived_t)
        self._total_cost[user] += event["cost"]

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
        for user in busiest - self._labelled:
            self._cost.labels(user)
            self._wait.labels(user)
        self._labelled = busiest
