"""A validated trace held column by column, in replay order (semantics §1), compactly.

Numbers live in typed arrays (8 bytes each) rather than lists of Python objects, users
as int codes, so a trace of ten million requests fits in a few hundred megabytes.
User codes follow the names' code-point order: comparing codes is comparing ids, which
is the tie rule of semantics §3. Token columns use -1 for null.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Sequence

NULL = -1  # a missing token count
OPTIONAL_COLUMNS = ("input_tokens", "max_tokens", "output_tokens", "cost", "service_s", "model")


def int_column(values: Sequence[int | None]) -> array:
    """Token counts as array('q') with -1 for null."""
    if isinstance(values, array) and values.typecode == "q":
        return values
    return array("q", (NULL if x is None else int(x) for x in values))


def float_column(values: Sequence[float]) -> array:
    if isinstance(values, array) and values.typecode == "d":
        return values
    return array("d", values)


def codes_of(names: Sequence[str | None]) -> tuple[array, list[str]]:
    """Int codes (-1 for null) into the sorted distinct names."""
    distinct = sorted({n for n in names if n is not None})
    code = {n: i for i, n in enumerate(distinct)}
    return array("i", (-1 if n is None else code[n] for n in names)), distinct


@dataclass(frozen=True)
class Trace:
    """Requests sorted by (arrival_s, row order); index i is request i everywhere in the core.

    ``user`` may be given as names; it is then coded, with ``users`` the names by code.
    ``model`` likewise, with ``models``. Optional columns are ``None`` when the file did not
    have them. ``weights`` maps user names to weights.
    """

    request_id: Sequence[str]
    user: Sequence[int] | Sequence[str]
    arrival_s: Sequence[float]
    input_tokens: Sequence[int | None] | None = None
    max_tokens: Sequence[int | None] | None = None
    output_tokens: Sequence[int | None] | None = None
    cost: Sequence[float] | None = None
    service_s: Sequence[float] | None = None
    model: Sequence[int] | Sequence[str | None] | None = None
    weights: dict[str, float] = field(default_factory=dict)
    users: Sequence[str] = ()
    models: Sequence[str] = ()

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not self.users:
            codes, names = codes_of(self.user)  # type: ignore[arg-type]
            put(self, "user", codes)
            put(self, "users", names)
        if self.model is not None and not self.models and any(isinstance(m, str) for m in self.model):
            codes, names = codes_of(self.model)  # type: ignore[arg-type]
            put(self, "model", codes)
            put(self, "models", names)
        put(self, "arrival_s", float_column(self.arrival_s))
        for name in ("input_tokens", "max_tokens", "output_tokens"):
            values = getattr(self, name)
            if values is not None:
                put(self, name, int_column(values))
        for name in ("cost", "service_s"):
            values = getattr(self, name)
            if values is not None:
                put(self, name, float_column(values))

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def columns(self) -> frozenset[str]:
        """The optional columns this trace has."""
        return frozenset(name for name in OPTIONAL_COLUMNS if getattr(self, name) is not None)

    def weight(self, user: str) -> float:
        return self.weights.get(user, 1.0)

    def weights_by_code(self) -> dict[int, float]:
        """The weights keyed by user code, as the schedulers see users in a replay."""
        index = {name: code for code, name in enumerate(self.users)}
        return {index[name]: w for name, w in self.weights.items() if name in index}

    def user_name(self, req: int) -> str:
        return self.users[self.user[req]]  # type: ignore[index]
