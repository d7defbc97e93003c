"""Event kinds and the engine's columnar event buffer (semantics §7)."""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS: tuple[str, ...] = ("arrive", "dispatch", "complete", "idle_reset", "cancel", "gap")
ARRIVE, DISPATCH, COMPLETE, IDLE_RESET, CANCEL, GAP = range(len(KINDS))
KIND_CODE: dict[str, int] = {name: code for code, name in enumerate(KINDS)}


@dataclass
class EventColumns:
    """Events as parallel lists, seq = ``start`` + position.

    ``req`` is the trace index of the event's request (-1 for idle_reset); the request id
    and user are looked up from the trace when the rows are written. ``cost`` is ``None``
    except on dispatches.
    """

    start: int = 0
    t: list[float] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    req: list[int] = field(default_factory=list)
    cost: list[float | None] = field(default_factory=list)
    v: list[float | None] = field(default_factory=list)
    meter: list[float | None] = field(default_factory=list)
    deficit: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)

    def drain(self) -> EventColumns:
        """Hand over the rows held so far and start an empty buffer after them."""
        chunk = EventColumns(self.start, self.t, self.kind, self.req, self.cost, self.v, self.meter, self.deficit)
        self.start += len(chunk)
        self.t, self.kind, self.req, self.cost, self.v, self.meter, self.deficit = [], [], [], [], [], [], []
        return chunk
