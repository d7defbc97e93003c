"""A replay's engines: how many, the model each runs, where it came from, and whether the
slots follow them (``--slots auto``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.limits import LimitSettings
from sfqtui.core.numbers import amount, count, counted
from sfqtui.errors import InputError

PLACEMENTS = ("room", "prefix", "affinity")  # where a dispatched request goes among the engines (docs/semantics.md §14)
FIT_SAID = 3  # the most of a fit's figures a description names (a fit opens with its source, requests and held-out error)


@dataclass(frozen=True)
class EngineSettings:
    """A replay's engines: how many, the model each runs, where the model came from (the
    JSON file and the fit it records, for what-if reports to say which model they used), and
    ``auto``: the slot controller's settings when the slots follow the engines (``--slots
    auto``; None: the replay's fixed slots)."""

    model: EngineModel
    engines: int = 1
    source: str | None = None  # the file the model was read from (None: given in code)
    fit: dict[str, Any] | None = None  # the fit the file records ("fit" in EngineModel's JSON), if any
    auto: LimitSettings | None = None
    placement: str = "room"  # room: the most room; prefix: the longest held prefix among engines with room; affinity: the longest held prefix

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise InputError(f"--placement {self.placement!r}: choose one of {', '.join(PLACEMENTS)}")
        if isinstance(self.engines, bool) or not isinstance(self.engines, int) or self.engines < 1:
            raise InputError(f"--engines {self.engines!r}: must be a whole number of at least 1")
        if not self.model.decode_ms_per_token > 0:
            raise InputError("the engine model's decode_ms_per_token must be > 0 in a replay: steps that take no time never end")

    @property
    def places(self) -> int:
        """Places in all the engines' batches together."""
        return self.engines * self.model.max_num_seqs

    def describe(self) -> str:
        """In words: '2 engines of 6 places, 65,536 KV tokens, model model.json (fit: trace rec.parquet, requests 900)'."""
        engines = "1 engine" if self.engines == 1 else f"{self.engines:,} engines"
        model = f"model {self.source}" if self.source else "sfqtui engine's default model"
        said = [f"{key} {_figure(value)}" for key, value in (self.fit or {}).items()
                if isinstance(value, str | int | float) and not isinstance(value, bool)]
        fit = f" (fit: {', '.join(said[:FIT_SAID])})" if said else " (fitted)" if self.fit is not None else ""
        limits = "" if self.auto is None else f", slots auto (at most {self.auto.maximum:,} an engine)"
        placed = "" if self.placement == "room" else f", placement {self.placement}"
        return f"{engines} of {self.model.max_num_seqs:,} places, {self.model.kv_tokens:,} KV tokens, {model}{fit}{limits}{placed}"

    def metadata(self) -> dict[str, Any]:
        """What a log records about its engines."""
        auto = None if self.auto is None else asdict(self.auto)
        placed = {} if self.placement == "room" else {"placement": self.placement}  # the default unsaid: older logs stay as they were
        return {"engines": self.engines, "model": self.model.as_dict(), "source": self.source, "fit": self.fit, "auto": auto, **placed}


def slots_named(slots: int, engine: EngineSettings | None) -> str:
    """The slots as a header says them: '6 slots', or 'auto slots' when they follow the engines."""
    return "auto slots" if engine is not None and engine.auto is not None else counted(slots, "slot")


def _figure(value: str | int | float) -> str:
    return value if isinstance(value, str) else count(value) if isinstance(value, int) else amount(value)
