"""Event kinds and the engine's event log: §7 rows packed into one typed buffer (semantics §7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from struct import Struct

# `sync`: a replica raised a user's meter by the charges other replicas made (semantics §11, share sync).
# `merge`: a live group's replica, back after the store was away, raised a meter by its own charges (§12).
# `start`: a request entered an engine's running batch (its `upstream`); `limit`: an upstream's
# concurrency limit changed (`upstream`, `limit`, `reason`).
KINDS: tuple[str, ...] = ("arrive", "dispatch", "complete", "idle_reset", "cancel", "gap", "sync", "merge", "start", "limit")
ARRIVE, DISPATCH, COMPLETE, IDLE_RESET, CANCEL, GAP, SYNC, MERGE, START, LIMIT = range(len(KINDS))
# The kinds no scheduler writes: what the engines and their limits did (no v, no meter).
ENGINE_KINDS = frozenset(("start", "limit"))

# The fields of a packed row, in order: the request is its trace index (-1: none), the
# replica -1 for none, the user its code (-1: none).
FIELDS: tuple[str, ...] = ("t", "kind", "req", "cost", "v", "meter", "deficit", "credit", "replica", "user")
# The fields a replay with the engine model adds after FIELDS (-1: none): the engine of a
# start row (or of a request's other rows once it was sent to one), and a limit row's new
# limit and the code of its reason in REASONS.
ENGINE_FIELDS: tuple[str, ...] = ("upstream", "limit", "reason")
# Why a limit changed (a limit row's reason), by code.
REASONS: tuple[str, ...] = ("start", "queue", "kv", "stale", "room", "latency", "backoff", "maximum")
_NUMBERS = ("cost", "v", "meter", "deficit", "credit")  # float fields; NaN is null
CHARGES = ("cost", "credit")  # the fields only a dispatch row holds
_ABSENT = "?"  # a field this scheduler never fills: struct stores any object as one ignored byte


@dataclass(frozen=True)
class EventLayout:
    """How the engine packs an event: one ``struct`` row per event, native byte order, no padding.

    A row always has every field of FIELDS, so the loop packs the same arguments for every
    scheduler; a field the scheduler never fills (``absent``) is packed as one ignored byte,
    so a None there costs nothing. Float fields hold NaN for null. Rows of every kind but
    dispatch are packed by ``uncharged``, which leaves CHARGES out: readers take them from
    dispatch rows only.
    """

    formats: tuple[str, ...]
    names: tuple[str, ...] = FIELDS  # FIELDS, then ENGINE_FIELDS in a replay with the engine model

    @classmethod
    def of(cls, v: bool, reading: str | None, credit: bool, replicated: bool, engines: bool = False) -> EventLayout:
        """The layout for a scheduler that fills v (``v``), the meter or deficit (``reading``),
        the credit of its dispatches (``credit``), for a replay of several replicas, and for
        one with the engine model (``engines``: rows carry ENGINE_FIELDS too)."""
        filled = {"v": v, "meter": reading == "meter", "deficit": reading == "deficit", "credit": credit, "cost": True}
        formats = {"t": "d", "kind": "b", "req": "q", "replica": "i" if replicated else _ABSENT, "user": "i"}
        formats.update({name: "d" if filled[name] else _ABSENT for name in _NUMBERS})
        if not engines:
            return cls(tuple(formats[name] for name in FIELDS))
        formats.update({"upstream": "i", "limit": "q", "reason": "b"})
        names = FIELDS + ENGINE_FIELDS
        return cls(tuple(formats[name] for name in names), names)

    @cached_property
    def struct(self) -> Struct:
        return Struct("=" + "".join(self.formats))

    @cached_property
    def uncharged(self) -> Struct:
        """The row with CHARGES left as zero bytes, for every kind but dispatch: a pack then takes
        one argument fewer for each (packing is much of what a row costs a replay's loop)."""
        return Struct("=" + "".join(f"{Struct('=' + code).size}x" if name in CHARGES else code
                                    for name, code in zip(self.names, self.formats)))

    @cached_property
    def tail(self) -> tuple[int, ...]:
        """What a row of no engine (-1 each) packs after FIELDS: ENGINE_FIELDS in a layout that has them, else nothing."""
        return (-1,) * (len(self.names) - len(FIELDS))

    def present(self, name: str) -> bool:
        return name in self.names and self.formats[self.names.index(name)] != _ABSENT

    def fields(self) -> list[tuple[str, str, int]]:
        """(name, struct code, byte offset) of every field that holds a value."""
        out, offset = [], 0
        for name, code in zip(self.names, self.formats):
            if code != _ABSENT:
                out.append((name, code, offset))
            offset += Struct("=" + code).size
        return out


@dataclass(frozen=True)
class EventRows:
    """Consecutive events as the engine packed them, seq = ``start`` + position: the one
    form a replay hands its events over in. The trace and log writers view ``data`` as
    columns without a Python object per event; ``columns()`` reads them in Python."""

    start: int
    data: bytes | bytearray
    layout: EventLayout

    def __len__(self) -> int:
        return len(self.data) // self.layout.struct.size

    def columns(self) -> EventColumns:
        """The events as Python columns, None for null."""
        layout = self.layout
        n = len(self)
        unpacked = list(zip(*self.layout.struct.iter_unpack(self.data))) if n else [()] * len(layout.names)
        by_name = dict(zip(layout.names, unpacked))
        nothing: list[None] = [None] * n

        def numbers(name: str) -> Sequence[float | None]:
            if not layout.present(name):
                return nothing
            if name in CHARGES:
                return [x if kind == DISPATCH and x == x else None for kind, x in zip(by_name["kind"], by_name[name])]
            return [None if x != x else x for x in by_name[name]]  # NaN is null

        return EventColumns(
            self.start, by_name["t"], by_name["kind"], by_name["req"], numbers("cost"), numbers("v"), numbers("meter"),
            numbers("deficit"), numbers("credit"),
            replica=by_name["replica"] if layout.present("replica") else None,
            user=by_name["user"] if layout.present("replica") else None,
            upstream=by_name["upstream"] if layout.present("upstream") else None,
            limit=by_name["limit"] if layout.present("upstream") else None,
            reason=by_name["reason"] if layout.present("upstream") else None,
        )


@dataclass
class EventColumns:
    """Events in seq order as parallel Python columns, seq = ``start`` + position: how the
    core's analyses read a replay's events.

    ``req`` is the trace index of the event's request (-1 for idle_reset); the request id
    and user are looked up from the trace when the rows are written. ``cost`` and
    ``credit`` (the DRR deficit a dispatch was sent against) are ``None`` except on
    dispatches; so are ``ratio`` and ``est_output`` (what the estimator priced a dispatch
    with), which are ``None`` altogether when no estimator priced the replay. ``replica``
    and ``user`` (codes, -1: none) only in a replay of several replicas. ``upstream``,
    ``limit`` and ``reason`` (ENGINE_FIELDS, -1: none) only in a replay with the engine model;
    ``cached_tokens`` (the prompt tokens found in the engine's prefix cache, on start rows) only
    when its engines model their caches (a trace with blocks, semantics §14).
    """

    start: int
    t: Sequence[float]
    kind: Sequence[int]
    req: Sequence[int]
    cost: Sequence[float | None]
    v: Sequence[float | None]
    meter: Sequence[float | None]
    deficit: Sequence[float | None]
    credit: Sequence[float | None]
    ratio: Sequence[float | None] | None = None
    est_output: Sequence[float | None] | None = None
    replica: Sequence[int] | None = None
    user: Sequence[int] | None = None
    upstream: Sequence[int] | None = None
    limit: Sequence[int] | None = None
    reason: Sequence[int] | None = None
    cached_tokens: Sequence[int | None] | None = None  # on start rows, when the engines model prefix caches (semantics §14)
    first_token_t: Sequence[float | None] | None = None  # on those start rows: when the request made its first token

    def __len__(self) -> int:
        return len(self.kind)


class EventLog:
    """What the engine appends to: packed rows in one growing buffer, handed over as EventRows."""

    def __init__(self, layout: EventLayout) -> None:
        self.layout = layout
        self.start = 0
        self.data = bytearray()
        self._size = layout.struct.size

    def __len__(self) -> int:
        return len(self.data) // self._size

    def held(self) -> EventRows:
        """The rows held so far, without handing them over."""
        return EventRows(self.start, bytes(self.data), self.layout)

    def drain(self) -> EventRows:
        """Hand over the rows held so far and start an empty buffer after them."""
        rows = EventRows(self.start, self.data, self.layout)
        self.start += len(rows)
        self.data = bytearray()
        return rows
