"""What the views show of a run of several balancer replicas (semantics §11), from its frame.

The replica selector (k cycles all, 0, 1, ...) is a view option. Under share none or
sync every replica has its own meters and v: the meter band draws each replica's users
in that replica's own band [v_r, v_r + c_max], one section per replica (or the selected
one's alone), and the status line gives its v, slots in flight and requests waiting.
Under share global there is one SFQ: the band is the one scheduler's, and selecting a
replica lists the users whose requests it holds. Everything comes from the run's log (its
replica column and its metadata), through core/log/replica_states.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from sfqtui.core.log.timeline import State
from sfqtui.core.numbers import amount, count
from sfqtui.core.replicas.settings import ONE_REPLICA, ReplicaSettings
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.ui.frame import Frame
from sfqtui.ui.widgets.columns import grid
from sfqtui.ui.widgets.fitted_line import Part, part


@dataclass(frozen=True)
class BandPart:
    """One section of the meter band: a replica's users drawn from its state, under a heading."""

    replica: int | None
    state: State
    heading: str | None


def replica_count(frame: Frame) -> int:
    """How many replicas the frame's run has (0: one balancer)."""
    return frame.replicas.count if frame.replicas is not None else 0


def shown_replicas(frame: Frame) -> list[int]:
    """The replicas the views show: the selected one, or all."""
    replicas = replica_count(frame)
    chosen = frame.options.replica
    return [chosen] if chosen is not None and chosen < replicas else list(range(replicas))


def replica_state(frame: Frame, r: int) -> State:
    """Replica r's state at the frame's cursor."""
    assert frame.replicas is not None
    return frame.replicas.state_at(r, frame.k, frame.state)


def own_slots(frame: Frame) -> list[int] | None:
    """Each replica's own slots (None: one pool, share global, or slots not known)."""
    replicas = frame.replicas
    if replicas is None or not replicas.split or frame.slots is None or replicas.settings is None:
        return None
    return replicas.settings.slots(frame.slots)


def band_parts(frame: Frame) -> list[BandPart] | None:
    """The meter band's sections (None: one band of the frame's state, as for one balancer)."""
    replicas = frame.replicas
    if replicas is None or not replicas.count:
        return None
    if not replicas.split and frame.options.replica is None:
        return None  # share global with every replica shown: the one scheduler's band
    slots = own_slots(frame)
    parts = []
    for r in shown_replicas(frame):
        state = replica_state(frame, r)
        parts.append(BandPart(r, state, _heading(frame, r, state, None if slots is None else slots[r])))
    return parts


def _heading(frame: Frame, r: int, state: State, slots: int | None) -> str:
    flight = f"in flight {count(state.inflight)}" + (f"/{count(slots)}" if slots is not None else "")
    if frame.replicas is not None and not frame.replicas.split:
        return f"replica {r} holds: {flight}, waiting {count(state.queued_total)} (meters and v: the one SFQ's)"
    own = f"v {amount(state.v)}, " if frame.has_meters else ""
    return f"replica {r}: {own}{flight}, waiting {count(state.queued_total)}"


def status_text(frame: Frame) -> list[Part]:
    """The status line's parts for replicas: which replica is shown (k cycles), and its v,
    slots in flight and requests waiting (for all: each replica's v). Each part is shown
    whole or not at all (sfqtui.ui.widgets.fitted_line); the ranks say which give way first."""
    replicas = replica_count(frame)
    if not replicas:
        return []
    chosen = frame.options.replica
    which = f"replica {chosen} of {replicas}" if chosen is not None else f"replicas: all {replicas}"
    parts = [part(9, Text.assemble("  ", (which, "bold cyan"), (" (k)", "dim")), Text.assemble("  ", (which, "bold cyan")))]
    assert frame.replicas is not None
    split = frame.replicas.split
    if chosen is not None and chosen < replicas:
        state = replica_state(frame, chosen)
        slots = own_slots(frame)
        flight = count(state.inflight) + (f"/{count(slots[chosen])}" if slots is not None else "")
        if frame.has_meters and split:
            parts.append(part(6, f"  v={amount(state.v)}"))
        parts += [part(8, f"  in flight {flight}", f"  slots {flight}"),
                  part(8, f"  waiting {count(state.queued_total)}", f"  wait {count(state.queued_total)}")]
    elif frame.has_meters and split:
        parts.append(part(2, "  v " + " ".join(f"{r}:{amount(replica_state(frame, r).v)}" for r in range(replicas))))
    return parts


def routed_lines(frame: Frame, users: list[int]) -> list[Text]:
    """Where each of ``users`` sent its requests so far: one row of counts per replica
    (requests queued there or sent from there), for the shares panel."""
    replicas = replica_count(frame)
    if not replicas or not users:
        return []
    states = [replica_state(frame, r) for r in range(replicas)]
    names = frame.table.users
    rows = []
    for u in users:
        counts = [s.queued[u] + s.dispatched[u] if u < len(s.queued) else 0 for s in states]
        rows.append(((names[u][:14], *(count(n) if n else "·" for n in counts)), ""))
    header = ("requests on", *(f"r{r}" for r in range(replicas)))
    return grid(header, rows, (False, *([True] * replicas)))


def run_label(run: Run) -> str:
    """A run's scheduler, with its replicas if it has several: what the divergence line calls it."""
    recorded = run.metadata.get("replicas")
    if recorded is not None:
        settings = ReplicaSettings.from_metadata(recorded)
    else:
        settings = run.opening.config.replicas if isinstance(run.opening, Opening) else ONE_REPLICA
    return run.scheduler if not settings.replicated else f"{run.scheduler} ({settings.describe()})"
