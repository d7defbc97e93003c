"""The options every replaying command shares: scheduler, slots, estimator, service model,
the engine model and the balancer replicas (semantics §11).

``with_replicated_replay_options`` adds them to a typer command's signature and hands the
command a ready ``ReplayChoices`` as its ``replay`` argument, so each command declares them once.
"""

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.limits import LimitSettings
from sfqtui.core.limits.slots import parse_slots
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.pricing.service import TokenServiceModel
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.recorded import RecordedLimits
from sfqtui.core.replicas.settings import ONE_REPLICA, ROUTERS, ReplicaSettings, Share
from sfqtui.core.schedulers.policy import HALF_LIFE_S, PolicyOptions
from sfqtui.errors import InputError
from sfqtui.trace.run_metadata import recorded_limits, recorded_scheduler, suggested_slots

F = TypeVar("F", bound=Callable[..., Any])
_PANEL_EST = ("Cost estimator (prices each request from its tokens, unless a trace has a cost column, as a proxy's recording does: "
              "then --reprice or any of these options; docs/estimator.md)")
_PANEL_SVC = "Service model (used when the trace has no service_s column)"
_PANEL_RUN = "Replay"
_PANEL_POL = "Policies operators run today (semantics §15: llm-d, dynamo, las)"
_PANEL_REP = "Replicas of the balancer (semantics §11; docs/semantics.md)"
_PANEL_ENG = ("Engine model (docs/engine.md): the slots send requests to modelled engines, each with its own FCFS queue, "
              "places and KV, instead of holding each for a fixed service time")


class EstimatorKind(str, Enum):
    ratio = "ratio"
    oracle = "oracle"


class RatioScope(str, Enum):
    glob = "global"
    model = "model"
    user = "user"


class RatioUpdate(str, Enum):
    window = "window"
    ema = "ema"
    cumulative = "cumulative"


@dataclass(frozen=True)
class ReplayChoices:
    """The replay options as given; ``config(slots)`` fills the slot default from the trace."""

    slots: int | None
    quantum: float | None
    renormalise_every: int | None
    estimator: EstimatorParams
    service: TokenServiceModel
    replicas: ReplicaSettings = ONE_REPLICA
    reprice: str | None = None  # why the estimator prices even a trace with a cost column: the option that asked
    engine: EngineSettings | None = None  # run the engine model (None: fixed service times)
    policy: PolicyOptions = field(default_factory=PolicyOptions)  # the options of the policies of semantics §15

    def config(self, scheduler: str, metadata: dict[str, Any]) -> ReplayConfig:
        """The replay of a trace whose Parquet metadata is ``metadata`` (empty: none, or an event log).
        With the engine model, the slots default to the engines' places (the trace's suggestion is for fixed service times).
        A recording's capacity is followed unless the slots or the engine model are given (then a what-if).
        A replay given none of these, nor other costs or replicas, under the scheduler a proxy's recording names
        (any, for a trace that is not one) is of the recording as it ran (``ReplayConfig.as_recorded``)."""
        recorded, recorded_by = recorded_limits(metadata), recorded_scheduler(metadata)
        default = self.engine.places if self.engine is not None else suggested_slots(metadata) or 1
        if self.engine is not None and self.engine.auto is not None:
            default = self.engine.engines * self.engine.auto.first  # where the limits start: they follow the engines from there
        capacity = recorded if self.slots is None and self.engine is None else None
        if capacity is not None:
            default = capacity.first
        return ReplayConfig(
            scheduler=scheduler,
            slots=self.slots or default,
            quantum=self.quantum,
            estimator=self.estimator,
            service=self.service,
            renormalise_every=self.renormalise_every,
            replicas=self.replicas,
            reprice=self.reprice is not None,
            engine=self.engine,
            capacity=capacity,
            policy=self.policy,
            as_recorded=(self.slots is None and self.engine is None and self.reprice is None and not self.replicas.replicated
                         and scheduler == (recorded_by or scheduler)),
        )

    @property
    def slots_chosen(self) -> int | None:
        """The slots the options set (None: the trace's suggestion decides); with the engine model, the engines' places by default."""
        return self.slots if self.engine is None else self.slots or self.engine.places

    def capacity_ignored(self, recorded: RecordedLimits | None) -> str:
        """What a replay's header says after its slots when the trace recorded its capacity
        (--slots auto) and the options replay it on other slots or the engine model (a what-if), else nothing."""
        if recorded is None or (self.slots is None and self.engine is None):
            return ""
        if self.engine is None:
            asked = f"--slots {self.slots}"
        else:
            asked = "--slots auto on the engine model" if self.engine.auto is not None else "the engine model"
        return f" ({asked}: the recorded capacity ignored)"

    def repriced(self, columns: frozenset[str]) -> str:
        """What a replay's header says after its costs' source when the trace has a cost column
        the estimator was asked to ignore (a what-if), else nothing."""
        if self.reprice is None or "cost" not in columns:
            return ""
        return f" ({self.reprice}: the trace's costs ignored)"




def _option(name: str, annotation: Any, default: Any, help: str, panel: str, *flags: str) -> inspect.Parameter:
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, typer.Option(*flags, help=help, rich_help_panel=panel, show_default=True)],
    )


_D_EST = EstimatorParams()
DEFAULT_ESTIMATOR = _D_EST  # the estimator options' defaults
_D_SVC = TokenServiceModel()
NO_CHOICES = ReplayChoices(None, None, None, _D_EST, _D_SVC)  # the defaults, as if no option was given
_PARAMS = [
    _option("slots", str | None, None, "Concurrent slots in the pool (servers x in-flight per server). Default: the trace's own suggestion, else 1. "
            "With the engine model also auto or auto:MAX: limits that follow each engine, at most MAX each (as sfqtui proxy --slots auto).",
            _PANEL_RUN, "--slots", "-n"),
    _option("quantum", float | None, None, "DRR quantum Q in cost units. Default: the largest cost in the trace.", _PANEL_RUN, "--quantum"),
    _option("renormalise_every", int | None, None,
            "SFQ: subtract v from all meters every N dispatches (§7.2). Only for explicit costs on an exact grid (e.g. whole numbers), "
            "where it provably changes no decision; docs/semantics.md.", _PANEL_RUN, "--renormalise-every"),
    _option("reprice", bool, False, "Ignore the trace's cost column (a proxy's recording: what each request was charged) and price "
            "with the estimator options given: a what-if. Any estimator option given implies it.", _PANEL_EST, "--reprice"),
    _option("estimator", EstimatorKind, EstimatorKind.ratio,
            "ratio: max_tokens x the learned output ratio (§6). oracle: the actual output, known in advance (needs output_tokens): "
            "the best any estimator could do (§10).", _PANEL_EST, "--estimator"),
    _option("input_weight", float, _D_EST.input_weight, "a: cost per input token.", _PANEL_EST, "--input-weight"),
    _option("output_weight", float, _D_EST.output_weight, "b: cost per estimated output token.", _PANEL_EST, "--output-weight"),
    _option("ratio_scope", RatioScope, RatioScope(_D_EST.scope), "Learn the output ratio globally, per model or per user.", _PANEL_EST, "--ratio-scope"),
    _option("ratio_update", RatioUpdate, RatioUpdate(_D_EST.update), "Ratio of sums over a sliding window, an exponential average, or over all completions.",
            _PANEL_EST, "--ratio-update"),
    _option("ratio_window", int, _D_EST.window, "Completions in the sliding window.", _PANEL_EST, "--ratio-window"),
    _option("ratio_alpha", float, _D_EST.alpha, "Weight of each completion in the exponential average.", _PANEL_EST, "--ratio-alpha"),
    _option("ratio_start", float, _D_EST.start_ratio, "Ratio used before any completion is seen.", _PANEL_EST, "--ratio-start"),
    _option("default_output", int, _D_EST.default_output_tokens, "Estimated output tokens for a request without max_tokens.", _PANEL_EST, "--default-output"),
    _option("cache_aware", bool, False, "Charge the input the engine will compute, max(1, input - cached), cached predicted at "
            "dispatch from the balancer's index of what each engine holds (needs the engine model and a trace with prefix_blocks; "
            "docs/semantics.md §14).", _PANEL_EST, "--cache-aware"),
    _option("ordering", str, "fcfs", "llm-d: the order within a flow, fcfs or edf (earliest deadline first: needs the trace column "
            "deadline_s; requests without one go last).", _PANEL_POL, "--ordering"),
    _option("class_weights", str, "", "dynamo: CLASS=WEIGHT,... for the trace's policy classes (its class column): a class's DRR quantum "
            "is 1,024 uncached tokens times its weight (default 1).", _PANEL_POL, "--class-weights"),
    _option("half_life", float, HALF_LIFE_S, "las: seconds for a user's attained service to decay by half.", _PANEL_POL, "--half-life"),
    _option("overhead_s", float, _D_SVC.overhead_s, "Fixed seconds per request.", _PANEL_SVC, "--overhead"),
    _option("prefill_tps", float, _D_SVC.prefill_tps, "Input tokens per second (prefill).", _PANEL_SVC, "--prefill-rate"),
    _option("decode_tps", float, _D_SVC.decode_tps, "Output tokens per second per request (decode).", _PANEL_SVC, "--decode-rate"),
]


_REPLICA_PARAMS = [
    _option("replicas", int, 1, "Balancer replicas K, each with its own scheduler unless --share global. 1: one balancer, today's replay.",
            _PANEL_REP, "--replicas", "-k"),
    _option("router", str, ONE_REPLICA.router, f"Which replica a request goes to, decided at its arrival: {', '.join(ROUTERS)}.",
            _PANEL_REP, "--router"),
    _option("share", str, "none", "What the replicas share: none (K independent schedulers on C // K slots each), sync:T[,D] "
            "(every T seconds each replica's meters and charges, applied D < T seconds later), global (one scheduler over all the slots).",
            _PANEL_REP, "--share"),
    _option("seed", int, ONE_REPLICA.seed, "Seed of the random router.", _PANEL_REP, "--seed"),
    _option("engine_model", Path | None, None, "Run this engine model (JSON of `sfqtui engine`'s parameters, as a fit writes: "
            "places, KV, step times) behind the slots; --slots then bounds what is dispatched and not complete, and defaults "
            "to the engines' places.", _PANEL_ENG, "--engine-model"),
    _option("engines", int | None, None, "Engines (servers) behind the balancer, each running the engine model; giving it "
            "without --engine-model runs `sfqtui engine`'s default model. Default: 1 with --engine-model.", _PANEL_ENG, "--engines"),
    _option("placement", str, "room", "Which engine a dispatched request goes to: room (the most room), prefix (on a trace with "
            "prefix_blocks: the longest prefix the balancer believes an engine holds, among engines with a free place and, while "
            "one has nothing in flight, that start it at once), affinity "
            "(the longest prefix wherever, load ignored: a reference). Never changes the scheduler's order.", _PANEL_ENG, "--placement"),
]


_ESTIMATOR_NAMES = ("input_weight", "output_weight", "ratio_scope", "ratio_update", "ratio_window", "ratio_alpha", "ratio_start", "default_output")


def _estimator_params(values: dict[str, Any], oracle: bool = False) -> EstimatorParams:
    return EstimatorParams(
        input_weight=values["input_weight"],
        output_weight=values["output_weight"],
        scope=values["ratio_scope"].value,
        update=values["ratio_update"].value,
        window=values["ratio_window"],
        alpha=values["ratio_alpha"],
        start_ratio=values["ratio_start"],
        default_output_tokens=values["default_output"],
        oracle=oracle,
        cache_aware=values.get("cache_aware", False),
    )


def _reprice_reason(values: dict[str, Any], context: typer.Context) -> str | None:
    """The option that asks for the estimator over a trace's cost column: --reprice, or the
    first estimator option given on the command line (its flag, as typed)."""
    if values["reprice"]:
        return "--reprice"
    for parameter in context.command.params:
        source = context.get_parameter_source(parameter.name) if parameter.name in ("estimator", "cache_aware", *_ESTIMATOR_NAMES) else None
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            return f"{parameter.opts[0]} implies --reprice"
    return None


def _choices(values: dict[str, Any], context: typer.Context) -> ReplayChoices:
    estimator = _estimator_params(values, oracle=values["estimator"] is EstimatorKind.oracle)
    service = TokenServiceModel(
        overhead_s=values["overhead_s"],
        prefill_tps=values["prefill_tps"],
        decode_tps=values["decode_tps"],
        default_output_tokens=values["default_output"],
    )
    slots, auto = (None, None) if values["slots"] is None else parse_slots(values["slots"])
    replicas = ReplicaSettings(values["replicas"], values["router"].strip(), Share.parse(values["share"]), values["seed"])
    engine = _engine(values["engine_model"], values["engines"], auto, values["placement"].strip())
    policy = PolicyOptions(values["ordering"].strip(), PolicyOptions.parse_weights(values["class_weights"]), values["half_life"])
    return ReplayChoices(slots, values["quantum"], values["renormalise_every"], estimator, service, replicas, _reprice_reason(values, context),
                         engine, policy)


def _engine(path: Path | None, engines: int | None, auto: LimitSettings | None, placement: str = "room") -> EngineSettings | None:
    """The engine model the options ask for (None: neither --engine-model nor --engines)."""
    if path is None and engines is None:
        if auto is not None:
            raise InputError("--slots auto follows the engines' metrics: give --engine-model FILE or --engines N (the default model)")
        if placement != "room":
            raise InputError(f"--placement {placement} places requests among engines: give --engines N or --engine-model FILE")
        return None
    model, fit = EngineModel.load_fitted(path, "--engine-model") if path is not None else (EngineModel(), None)
    return EngineSettings(model, 1 if engines is None else engines, None if path is None else str(path), fit, auto, placement)


def _adding_options(func: F, argument: str, options: list[inspect.Parameter], build: Callable[[dict[str, Any], typer.Context], Any]) -> F:
    """``func`` with ``options`` in its signature, called with ``argument=build(their values, the command's context)``
    instead (the context says which options were given; typer hands it to one parameter only: the command's own, if it has one)."""
    signature = inspect.signature(func)
    own = [p for p in signature.parameters.values() if p.name != argument]
    names = [p.name for p in options]
    context = next((p.name for p in own if p.annotation in (typer.Context, "typer.Context")), None)
    added = [] if context is not None else [inspect.Parameter("options_context", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        given = kwargs[context] if context is not None else kwargs.pop("options_context")
        shared = {name: kwargs.pop(name) for name in names}
        return func(**{argument: build(shared, given)}, **kwargs)

    params = [*own, *options, *added]
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]  # inspect.signature reads it; functions do not declare it
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return cast(F, wrapper)


def with_replicated_replay_options(func: F) -> F:
    """The replay options and the replica options (semantics §11)."""
    return _adding_options(func, "replay", _PARAMS + _REPLICA_PARAMS, _choices)


def with_estimator_options(func: F) -> F:
    """Only the ratio estimator's options, for a command that prices requests before their
    output exists (no oracle); the command gets them as ``estimator: EstimatorParams``."""
    return _adding_options(func, "estimator", [p for p in _PARAMS if p.name in _ESTIMATOR_NAMES], lambda values, _context: _estimator_params(values))
