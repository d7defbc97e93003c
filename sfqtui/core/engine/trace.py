"""A validated trace held column by column, in replay order (semantics §1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass(frozen=True)
class Trace:
    """Requests sorted by (arrival_s, row order); index i is request i everywhere in the core.

    Optional columns are ``None`` when the file did not have them; inside a present
    column an element may be ``None`` only where the schema allows nulls.
    """

    request_id: Sequence[str]
    user: Sequence[str]
    arrival_s: Sequence[float]
    input_tokens: Sequence[int | None] | None = None
    max_tokens: Sequence[int | None] | None = None
    output_tokens: Sequence[int | None] | None = None
    cost: Sequence[float] | None = None
    service_s: Sequence[float] | None = None
    model: Sequence[str | None] | None = None
    weights: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.request_id)

    def weight(self, user: str) -> float:
        return self.weights.get(user, 1.0)

    @property
    def users(self) -> list[str]:
        return sorted(set(self.user))
