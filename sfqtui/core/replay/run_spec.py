"""Run specs: a scheduler and, optionally, the replica settings it runs with (semantics §11).

The one parser of the run specs that `replay --compare`, `explain --compare` and the
lessons take, so one SFQ can be stepped beside a replicated run:

    SCHEDULER[@SETTING=VALUE,SETTING=VALUE,...]

Settings: ``replicas=K`` (also ``k=K``), ``router=hash|random|round-robin|least-loaded``,
``share=none|global|sync:T[,D]``, ``seed=N``, ``slots=N|auto|auto:MAX`` (auto: limits that
follow the engines, on the engine model), ``engines=N`` (a replay on
the engine model: N engines of the compared run's model, or of `sfqtui engine`'s default
model when that run has none), and on the engine model ``placement=room|prefix|affinity`` and
``pricing=cache-blind|cache-aware`` (docs/semantics.md §14). A spec says what differs from the run it is
compared with: a setting it does not give is that run's. Several specs are separated
by commas: after an ``@``, a part with ``=`` is one more setting of the same spec, a bare
number right after ``share=sync:T`` is its delay D, and any other part starts the next
spec. So ``drr,sfq@replicas=2,router=hash,share=sync:5,1,fifo`` is three specs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import PLACEMENTS, EngineSettings
from sfqtui.core.limits.slots import parse_slots
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.core.schedulers.registry import check_schedulers
from sfqtui.errors import InputError

SETTINGS = ("replicas", "router", "share", "seed", "slots", "engines", "placement", "pricing")
PRICINGS = ("cache-blind", "cache-aware")
_ALIASES = {"k": "replicas"}


@dataclass(frozen=True)
class RunSpec:
    """A scheduler and the replica, slot and engine settings given for it (None: the compared run's)."""

    scheduler: str
    replicas: int | None = None
    router: str | None = None
    share: Share | None = None
    seed: int | None = None
    slots: str | None = None  # as given: a count, auto or auto:MAX (checked by parse_slots)
    engines: int | None = None
    placement: str | None = None
    pricing: str | None = None  # cache-blind or cache-aware

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        """One spec; InputError saying what is wrong otherwise."""
        name, at, settings = text.strip().partition("@")
        name = name.strip()
        check_schedulers([name])
        if at and not settings.strip():
            raise InputError(f"run spec {text.strip()!r}: nothing after @; give settings such as {name}@replicas=2,router=hash,share=none")
        given: dict[str, str] = {}
        for part in _setting_parts(settings) if at else []:
            key, equals, value = part.partition("=")
            key = _ALIASES.get(key.strip(), key.strip())
            if not equals or key not in SETTINGS:
                raise InputError(f"run spec {text.strip()!r}: {part.strip()!r} is not a setting; use {', '.join(k + '=' for k in SETTINGS)}")
            if key in given:
                raise InputError(f"run spec {text.strip()!r}: {key} is given twice")
            given[key] = value.strip()
        try:
            spec = cls(
                name,
                replicas=_whole(given["replicas"], "replicas", text) if "replicas" in given else None,
                router=given.get("router"),
                share=Share.parse(given["share"]) if "share" in given else None,
                seed=_whole(given["seed"], "seed", text) if "seed" in given else None,
                slots=_slots(given["slots"], text) if "slots" in given else None,
                engines=_whole(given["engines"], "engines", text) if "engines" in given else None,
                placement=_placement(given["placement"], text) if "placement" in given else None,
                pricing=_pricing(given["pricing"], text) if "pricing" in given else None,
            )
            spec.replica_settings(ReplicaSettings())  # the router name and the count, checked now
        except ValueError as exc:
            raise InputError(f"run spec {text.strip()!r}: {exc}") from None
        return spec

    @classmethod
    def written_out(cls, scheduler: str, settings: ReplicaSettings) -> RunSpec:
        """The spec of a run with every setting that tells it apart written out: none for one
        replica, the seed only where the router uses it (random)."""
        if not settings.replicated:
            return cls(scheduler)
        return cls(scheduler, settings.count, settings.router, settings.share, settings.seed if settings.router == "random" else None)

    @property
    def plain(self) -> bool:
        """Only a scheduler: no replica setting of its own."""
        return all(value is None for value in (self.replicas, self.router, self.share, self.seed, self.slots, self.engines,
                                               self.placement, self.pricing))

    def replica_settings(self, base: ReplicaSettings) -> ReplicaSettings:
        """``base`` with the settings this spec gives."""
        return ReplicaSettings(
            self.replicas if self.replicas is not None else base.count,
            self.router if self.router is not None else base.router,
            self.share if self.share is not None else base.share,
            self.seed if self.seed is not None else base.seed,
        )

    def config(self, base: ReplayConfig) -> ReplayConfig:
        """The replay of ``base`` under this spec's scheduler, replica, slot and engine settings;
        InputError when they do not fit its slots (fewer than the replicas) or its scheduler."""
        engine, slots, capacity = base.engine, base.slots, base.capacity
        if self.engines is not None or self.slots is not None:
            capacity = None  # other slots, or engines, than the recording's: a what-if
        if self.engines is not None:
            engine = EngineSettings(EngineModel(), self.engines) if engine is None else replace(engine, engines=self.engines)
        if self.slots is not None:
            count, auto = parse_slots(self.slots, f"run spec {self}: slots")
            if auto is not None and engine is None:
                raise InputError(f"run spec {self}: slots=auto follows the engines' metrics: give --engine-model or engines=N")
            if engine is not None:
                engine = replace(engine, auto=auto)
            slots = count if count is not None else engine.engines * auto.first  # type: ignore[union-attr]  # auto is set when count is not
        if self.placement is not None:
            if engine is None:
                raise InputError(f"run spec {self}: placement places requests among engines: give --engine-model or engines=N")
            engine = replace(engine, placement=self.placement)
        estimator = base.estimator if self.pricing is None else replace(base.estimator, cache_aware=self.pricing == "cache-aware")
        try:
            replicas = self.replica_settings(base.replicas)
            as_recorded = (base.as_recorded and self.scheduler == base.scheduler and replicas == base.replicas and self.slots is None
                           and self.engines is None and self.placement is None and estimator == base.estimator)
            return replace(base, scheduler=self.scheduler, replicas=replicas, slots=slots, engine=engine,
                           capacity=capacity, estimator=estimator, as_recorded=as_recorded)
        except ValueError as exc:
            raise InputError(f"run spec {self}: {exc}") from None

    def changes(self, base: ReplayConfig) -> dict[str, object]:
        """The ReplayConfig fields that differ in this spec's replay of ``base``: the scheduler
        and replicas always, the slots and engines only when the spec gives them."""
        config = self.config(base)
        changed: dict[str, object] = {"scheduler": config.scheduler, "replicas": config.replicas}
        if self.slots is not None:
            changed["slots"] = config.slots
        if self.engines is not None or self.slots is not None or self.placement is not None:
            changed["engine"] = config.engine
            changed["capacity"] = config.capacity
        if self.pricing is not None and config.estimator != base.estimator:  # the same pricing is no what-if
            changed["estimator"] = config.estimator
        return changed

    def __str__(self) -> str:
        settings = [f"{key}={value}" for key, value in (("replicas", self.replicas), ("router", self.router), ("share", self.share),
                                                        ("seed", self.seed), ("slots", self.slots), ("engines", self.engines),
                                                        ("placement", self.placement), ("pricing", self.pricing))
                    if value is not None]
        return self.scheduler + ("@" + ",".join(settings) if settings else "")


def parse_run_specs(text: str) -> list[RunSpec]:
    """Comma-separated run specs (see the module's docstring); InputError when there is none."""
    written = split_run_specs(text)
    if written:
        check_schedulers([one.partition("@")[0].strip() for one in written])
    specs = [RunSpec.parse(one) for one in written]
    if not specs:
        raise InputError(f"no run spec in {text!r}; give schedulers such as sfq,drr or sfq@replicas=2,router=hash,share=none")
    return specs


def split_run_specs(text: str) -> list[str]:
    """The specs of a comma-separated list, each as written."""
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if specs and "@" in specs[-1] and (("=" in part and "@" not in part) or _is_delay(specs[-1], part)):
            specs[-1] += "," + part
        else:
            specs.append(part)
    return specs


def _setting_parts(settings: str) -> list[str]:
    """The settings after an @, a sync delay kept with its share."""
    parts: list[str] = []
    for part in (p.strip() for p in settings.split(",")):
        if parts and _is_delay(parts[-1], part):
            parts[-1] += "," + part
        elif part:
            parts.append(part)
    return parts


def _is_delay(before: str, part: str) -> bool:
    """Whether ``part`` is the D of a ``share=sync:T`` that ends ``before``."""
    last = re.split("[,@]", before)[-1].replace(" ", "")
    if not last.startswith("share=sync:"):
        return False
    try:
        float(part)
    except ValueError:
        return False
    return True


def _placement(value: str, text: str) -> str:
    if value not in PLACEMENTS:
        raise InputError(f"run spec {text.strip()!r}: placement={value}: choose one of {', '.join(PLACEMENTS)}")
    return value


def _pricing(value: str, text: str) -> str:
    if value not in PRICINGS:
        raise InputError(f"run spec {text.strip()!r}: pricing={value}: choose one of {', '.join(PRICINGS)}")
    return value


def _slots(value: str, text: str) -> str:
    """A spec's slots as given, once checked."""
    parse_slots(value, f"run spec {text.strip()!r}: slots")
    return value


def _whole(value: str, key: str, text: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"run spec {text.strip()!r}: {key} takes a whole number, not {value!r}") from None
