"""The engine's Prometheus metrics, under vLLM's names, labels and buckets (vllm/v1/metrics/loggers.py).

The gauges and the prefix-cache counters read the scheduler at scrape time; the histograms
take each finished request.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from sfqtui.emulator.scheduler import Scheduler, Sequence

LABELS = ("model_name", "engine")
ENGINE = "0"  # one engine core, as vLLM labels its first
# vLLM's request_latency_buckets, shared by its e2e and queue time histograms.
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                           480.0, 960.0, 1920.0, 7680.0)


class PrefixCacheCounters(Collector):
    """vLLM's ``vllm:prefix_cache_queries`` and ``vllm:prefix_cache_hits`` (in tokens: the prompt
    tokens looked up, and those found held), read from the scheduler's totals."""

    def __init__(self, scheduler: Scheduler, labels: list[str]) -> None:
        self._scheduler = scheduler
        self._labels = labels

    def collect(self) -> Iterator[CounterMetricFamily]:
        for name, documentation, value in (
                ("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", self._scheduler.prefix_queries),
                ("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", self._scheduler.prefix_hits)):
            family = CounterMetricFamily(name, documentation, labels=LABELS)
            family.add_metric(self._labels, value)
            yield family


class EngineMetrics:
    def __init__(self, model_name: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = {"model_name": model_name, "engine": ENGINE}
        self._label_values = [model_name, ENGINE]
        self._running = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", LABELS,
                              registry=self.registry).labels(**labels)
        self._waiting = Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", LABELS,
                              registry=self.registry).labels(**labels)
        self._kv = Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", LABELS,
                         registry=self.registry).labels(**labels)
        self._e2e = Histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", LABELS,
                              buckets=REQUEST_LATENCY_BUCKETS, registry=self.registry).labels(**labels)
        self._queue = Histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                                LABELS, buckets=REQUEST_LATENCY_BUCKETS, registry=self.registry).labels(**labels)
        # The emulator's own (vLLM has none): e2e less queue time less this is what the host's lateness added.
        self._model = Histogram("sfqtui:request_model_time_seconds", "Histogram of the time a request's engine steps took by the "
                                "engine model, per finished request.", LABELS, buckets=REQUEST_LATENCY_BUCKETS,
                                registry=self.registry).labels(**labels)

    def watch(self, scheduler: Scheduler) -> None:
        self._running.set_function(lambda: len(scheduler.running))
        self._waiting.set_function(lambda: len(scheduler.waiting))
        self._kv.set_function(lambda: scheduler.used_kv / scheduler.model.kv_tokens)
        self.registry.register(PrefixCacheCounters(scheduler, self._label_values))

    def finished(self, seq: Sequence) -> None:
        assert seq.admitted_t is not None and seq.finished_t is not None
        self._queue.observe(seq.admitted_t - seq.queued_t)  # as vLLM's: from the engine core's queue, not the HTTP request
        self._e2e.observe(seq.finished_t - seq.arrived_t)
        self._model.observe(seq.model_s)

    def render(self, names: list[str] | None = None) -> bytes:
        """The exposition; of ``names`` only when given (as prometheus_client's own endpoint does with ``name[]`` in the query)."""
        return generate_latest(self.registry.restricted_registry(names) if names else self.registry)
