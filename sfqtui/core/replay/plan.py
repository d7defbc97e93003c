"""A replay's plan: everything decided once from the trace and the config, before the first event.

How dispatches are priced (the trace's cost column, or an estimator per pool) and how long a
request is served (fixed service times, or the engine model), the pools (a scheduler and its
slots each), the log's layout, the replica layer (None: one scheduler) and the servers behind
the slots. Building a plan is also how a setting the trace cannot be replayed with is refused
(InputError), before anything runs. A plan's schedulers, estimators and servers are the ones a
replay runs: it is built for one run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial

from sfqtui.core.engines.servers import EngineServers
from sfqtui.core.events import EventLayout, EventLog
from sfqtui.core.pricing.estimator import CostEstimator
from sfqtui.core.replay.attributes import WindowAttributes
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.operations import PoolOperations
from sfqtui.core.replay.recorded import RecordedCapacity
from sfqtui.core.replay.recorded_starts import RecordedStarts
from sfqtui.core.replay.servers import FixedService, Servers
from sfqtui.core.replicas.group import ReplicaGroup
from sfqtui.core.requests.chunks import RequestChunks, WholeTrace
from sfqtui.core.requests.trace import Trace
from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers import Scheduler, make_scheduler, traits
from sfqtui.core.schedulers.base import CostOf, User
from sfqtui.errors import InputError

Feed = Callable[[], tuple[Sequence[float], Sequence[User], int, float]]


class ReplayPlan:
    """The trace (``requests``, reached through ``window``), the pricing (``cost_source``, each
    pool's ``estimators``), the pools (``pool_slots``, ``schedulers`` and their ``operations``),
    the ``log`` a run appends to, the replica ``group`` and the ``servers`` (which, with
    ``starts_recorded``, start requests when a recording says their engine did), and the
    ``upstream_names`` the rows' upstream codes index (None: the engines, named by number)."""

    def __init__(self, trace: Trace | RequestChunks, config: ReplayConfig) -> None:
        self.requests: RequestChunks = WholeTrace(trace) if isinstance(trace, Trace) else trace
        self.config = config
        self.traits = found = traits(config.scheduler)
        self.window = RequestWindow()
        columns = self.requests.columns
        self.estimator: CostEstimator | None = None
        complete_charge: CostOf | None = None
        if found.charges == "actual":
            for column in ("input_tokens", "output_tokens"):
                if column not in columns:
                    raise InputError(f"{config.scheduler} charges actual usage and needs the trace column '{column}' "
                                     "(semantics §9); this trace has none")
            self.estimator = CostEstimator(config.estimator, self.window, columns)
            complete_charge = self.estimator.output_charge
            self.cost_source = "input at dispatch, output at completion"
        elif "cost" in columns and not config.estimator.oracle and not config.reprice:
            self.cost_source = "column"
        else:
            if "input_tokens" not in columns:
                raise InputError("pricing with the estimator (--reprice, an estimator option, or the oracle) needs the trace column "
                                 "'input_tokens'; this trace has only costs")
            self.estimator = CostEstimator(config.estimator, self.window, columns)
            self.cost_source = "oracle" if config.estimator.oracle else "estimator"
        self.charges_actual = complete_charge is not None
        self.service_source = "engine model" if config.engine is not None else "column" if "service_s" in columns else "model"
        if config.estimator.cache_aware and (config.engine is None or "prefix_blocks" not in columns or self.estimator is None):
            raise InputError("--cache-aware charges the input an engine will compute: it needs the engine model (--engines N or "
                             "--engine-model FILE) and a trace with prefix_blocks (semantics §14)")
        if config.engine is not None and config.engine.placement != "room" and "prefix_blocks" not in columns:
            raise InputError(f"--placement {config.engine.placement} places requests by the prefixes engines hold: it needs a trace "
                             "with prefix_blocks (semantics §14); this trace has none")
        self.quantum = config.quantum
        if found.needs_quantum and self.quantum is None:
            self.quantum = self.largest_cost()
        replicas = config.replicas
        self.pool_slots = replicas.slots(config.slots) if replicas.replicated and replicas.share.splits_slots else [config.slots]
        weights = self.requests.weights_by_code()
        self.attributes: WindowAttributes | None = None  # what a policy of semantics §15 reads of each request
        if found.build_policy is None:
            self.schedulers: list[Scheduler] = [found.build(weights, self.quantum) for _ in self.pool_slots]
        else:
            self.attributes = attributes = self._policy_attributes()
            self.schedulers = [make_scheduler(config.scheduler, weights, self.quantum, attributes, config.policy) for _ in self.pool_slots]
        self.clocked = self.schedulers[0].clocked  # the loop tells it the time before it dispatches
        self.credit_bound = self._credit_bound() if config.scheduler == "dynamo" else None
        self.scheduler = self.schedulers[0]
        self.estimators: list[CostEstimator | None] = [self.estimator] + [
            None if self.estimator is None else CostEstimator(config.estimator, self.window, columns) for _ in self.pool_slots[1:]
        ]
        renormalise = config.renormalise_every if found.renormalisable else None
        if renormalise:
            self._check_renormalisable()
        self.operations = PoolOperations.of(self.schedulers, self.estimators, complete_charge, renormalise)
        # A recording replayed as it ran: the engine starts it kept become start rows, and its rows name the upstreams
        # it recorded, as the proxy's stream did (recorded_starts.py).
        as_ran = config.as_recorded and self.cost_source == "column" and config.engine is None and not replicas.replicated
        self.starts_recorded = as_ran and "engine_start_s" in columns
        self.upstreams_recorded = as_ran and "upstream" in columns
        self.upstream_names = self._upstream_names(as_ran)
        self.layout = EventLayout.of(found.virtual_time, found.reading, "credit" in found.extra_columns, replicas.replicated,
                                     engines=config.engine is not None or config.capacity is not None or self.starts_recorded
                                     or self.upstreams_recorded)
        self.log = EventLog(self.layout)
        # Several replicas: the layer that routes, names replicas and exchanges charges (None: one scheduler).
        self.group = ReplicaGroup(replicas, self.requests.users, weights, self.schedulers, self.log) if replicas.replicated else None
        self.split = self.group is None or self.group.split  # each replica has a pool of its own
        self.servers: Servers
        if config.engine is not None:
            self.servers = engines = EngineServers(config.engine, self.window)
            if config.estimator.cache_aware:
                for estimator in self.estimators:
                    if estimator is not None:
                        estimator.cached_of = engines.predicted
            if self.attributes is not None and config.scheduler == "dynamo" and "prefix_blocks" in columns:  # Dynamo prices a request by its uncached input
                self.attributes.cached_of = partial(engines.predicted, sending=False)
        else:
            self.servers = fixed = FixedService(config.service, self.window)
            if config.capacity is not None:
                names = self.upstream_names
                fixed.capacity = RecordedCapacity(config.capacity, None if names is None else [names.index(u) for u in config.capacity.upstreams])
            if self.starts_recorded or self.upstreams_recorded:
                self.servers = RecordedStarts(fixed)

    def _upstream_names(self, as_ran: bool) -> list[str] | None:
        """The upstreams a replay of a recording names, by address: those of its requests when it is replayed
        as it ran (their codes index these), then those of its recorded capacity that no request went to, which
        a what-if that follows the capacity names on its limit rows too (None: it names none)."""
        names = list(self.requests.upstreams) if as_ran and "upstream" in self.requests.columns else []
        if self.config.capacity is not None:
            names += [name for name in self.config.capacity.upstreams if name not in names]
        return names or None

    def _policy_attributes(self) -> WindowAttributes:
        """The requests' attributes a policy of semantics §15 reads; InputError for an option the trace cannot serve."""
        config, columns = self.config, self.requests.columns
        if config.scheduler == "llm-d" and config.policy.ordering == "edf" and "deadline_s" not in columns:
            raise InputError("llm-d --ordering edf orders each flow by deadline and needs the trace column 'deadline_s'; this trace has none")
        if config.scheduler == "dynamo" and config.policy.class_weights:
            if "class" not in columns:
                raise InputError("dynamo --class-weights weighs policy classes and needs the trace column 'class'; this trace has none")
            config.policy.check_classes({name for chunk in self.requests.chunks() for name in chunk.trace.policy_class or () if name is not None})
        return WindowAttributes(self.window, self.requests.users, columns, tokens="input_tokens" in columns)

    def _credit_bound(self) -> float:
        """The most a Dynamo class can hold (its deficit's DRR bound): the largest class quantum plus the
        largest request cost, max(1, input tokens) (the dispatch's cost without them); the log records it for `check`."""
        policy = self.config.policy
        largest_weight = max([1.0, *(weight for _, weight in policy.class_weights)])
        if "input_tokens" in self.requests.columns:
            largest = max([1.0, *(max(chunk.trace.input_tokens) for chunk in self.requests.chunks())])  # type: ignore[arg-type]  # the trace has the column
        else:
            largest = self.largest_cost()
        return policy.class_quantum * largest_weight + largest

    def largest_cost(self) -> float:
        """c_max of the trace: the explicit costs, or the most the estimator can charge."""
        if not len(self.requests):
            return 1.0
        if self.cost_source == "column":
            return max(max(chunk.trace.cost) for chunk in self.requests.chunks())  # type: ignore[arg-type]  # cost_source "column": every chunk has one
        assert self.estimator is not None
        return max(self.estimator.largest_upper_bound(chunk.trace) for chunk in self.requests.chunks())

    def _check_renormalisable(self) -> None:
        """Renormalising is only decision-preserving when every sum is exact in both frames.

        Float sums of the same charges round differently once v is subtracted, so a tie in
        one frame can become an order in the other. Sums are exact when every charge is a
        multiple of one power-of-two grid and the total stays below 2^53 grid steps: then
        both frames compute the same numbers, shifted, and every decision is the same.
        """
        if self.cost_source != "column":
            raise InputError("--renormalise-every needs explicit costs: estimated costs are not exact in floating point, "
                             "so renormalising could change a decision (docs/semantics.md)")
        weights = self.requests.weights_by_code()
        largest_denominator, total = 1, 0.0
        for chunk in self.requests.chunks():
            costs = chunk.trace.cost
            assert costs is not None  # cost_source "column": every chunk has the cost column
            for user, cost in zip(chunk.trace.user, costs):
                charge = cost / weights.get(user, 1.0)
                denominator = charge.as_integer_ratio()[1]
                if denominator > largest_denominator:
                    largest_denominator = denominator
                total += charge
        if largest_denominator > 1 << 30 or total * largest_denominator >= 2.0**53:
            raise InputError("--renormalise-every needs charges (cost / weight) on one exact grid, such as whole numbers: "
                             "with these costs renormalising could change a decision (docs/semantics.md)")

    def costs(self) -> list[CostOf]:
        """What a dispatch of each pool charges, by request index: its estimator's charge, or the
        cost column (the window must hold the first chunk)."""
        costs: list[CostOf] = []
        for estimator in self.estimators:
            if estimator is not None:
                costs.append(estimator.input_charge if self.charges_actual else estimator.cost)
            elif isinstance(self.requests, WholeTrace):  # one chunk, held whole: its own column, with no Python call to go through
                assert self.requests.trace.cost is not None  # cost_source "column"
                costs.append(self.requests.trace.cost.__getitem__)
            else:
                costs.append(self.window.cost_column())
        return costs

    def feeder(self) -> Feed:
        """What a loop calls to bring the next chunk into the window (with what the servers keep
        of its requests): its arrivals, users, length and first arrival (none left: empty, and an
        infinite first arrival)."""
        incoming = iter(self.requests.chunks())
        window, group, entering = self.window, self.group, self.servers.entering

        def enter() -> tuple[Sequence[float], Sequence[User], int, float]:
            chunk = next(incoming, None)
            if chunk is None:
                return (), (), 0, float("inf")
            trace = chunk.trace
            window.add(chunk, entering(trace))
            if group is not None:
                group.enter(trace, chunk.start)
            return trace.arrival_s, trace.user, len(trace), trace.arrival_s[0]

        return enter

    def retire_below(self, oldest: int) -> None:
        """The window retires the chunks below request ``oldest``, and the servers forget what they kept of them."""
        self.servers.retired(self.window.retire_below(oldest))

    def oldest_in_system(self, arrived: int, serving: Iterable[int]) -> int:
        """The oldest request not yet completed: yet to arrive (``arrived``), queued in a pool's scheduler, or ``serving``."""
        queued = [oldest for sched in self.schedulers if (oldest := sched.oldest_queued()) is not None]
        return min([arrived, *queued, *serving])
