"""What every view draws: one run's rebuilt state at its cursor, how the app is running, and the view options."""

from __future__ import annotations

from dataclasses import dataclass

from sfqtui.attach.bound import Bound
from sfqtui.core.events import DISPATCH
from sfqtui.core.log.replica_states import ReplicaStates
from sfqtui.core.log.table import EventTable
from sfqtui.core.log.timeline import State
from sfqtui.ui.stream.connection import Link


@dataclass(frozen=True)
class ViewOptions:
    """What the views list and in which order, as the keys set them: the app's state, handed
    to every view in its frame, so every pane and any new layout show the same."""

    sort: str = "meter"  # the meter band's order (meter_band.SORTS)
    show_folded: bool = False  # the band lists users idle for long too
    dispatches_only: bool = False  # the log lists dispatches only
    user_filter: str | None = None  # the log lists this user's events only
    replica: int | None = None  # in a run of several replicas: the band, the log and the status line show this one's (None: all)

    @property
    def log_description(self) -> str:
        """What the log lists, if not every event ("" when it does)."""
        if not self.dispatches_only and not self.user_filter and self.replica is None:
            return ""
        what = "dispatches" if self.dispatches_only else "all events"
        return what + (f" of {self.user_filter}" if self.user_filter else "") + (f" on replica {self.replica}" if self.replica is not None else "")


@dataclass(frozen=True)
class Frame:
    table: EventTable
    state: State
    k: int
    title: str
    slots: int | None
    loaded: float | None  # None: the source never ends
    loading: bool
    playing: bool
    speed: float
    connection: Link | None = None  # a live source's connection and proxy run
    options: ViewOptions = ViewOptions()
    replicas: ReplicaStates | None = None  # each replica's state, in a run of several replicas
    bound: Bound | None = None  # a group's bound: as last heard (live), or at the cursor (a recording)
    limits: dict[str, int] | None = None  # --slots auto: each upstream's limit, as a live proxy said last or a recording at the cursor
    repriced: bool = False  # a replay priced by the estimator instead of the trace's recorded costs: a what-if
    capacity_ignored: bool = False  # a replay of a recording under --slots auto on other slots or the engine model: a what-if

    @property
    def picked(self) -> int | None:
        """The user code dispatched at this event, if it is a dispatch."""
        if 0 <= self.k < len(self.table) and self.table.kind[self.k] == DISPATCH:
            return self.table.user[self.k]
        return None

    @property
    def band(self) -> str:
        """How the scheduler's per-user number is drawn: "virtual" ([v, v + c_max]),
        "credit" ([0, c_max]), "lowest" ([lowest waiting, + c_max]) or "queue" (queue lengths),
        from the scheduler registry."""
        traits = self.table.traits
        return traits.band if traits is not None else "queue"

    @property
    def has_meters(self) -> bool:
        """The scheduler has virtual time and meters S_i (SFQ and its variants)."""
        traits = self.table.traits
        return traits is not None and traits.virtual_time
