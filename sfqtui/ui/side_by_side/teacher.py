"""What the side-by-side panes say at each step: a narration line and the serving order.

Both come from the core: the narration from `narrate` (built from the state and the
scheduler registry), the order from a shadow of the real scheduler re-driven from the
run's log, so a DRR pane shows the active list and the visit in progress exactly as the
core's DRR holds them. One shadow is kept per run.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import Lock

from sfqtui.core.analysis.narrate import narrate
from sfqtui.core.log.shadow import Shadow, ShadowMismatch
from sfqtui.core.schedulers import Scheduler
from sfqtui.runs.run import Run

ORDER_SHOWN = 40
WARM_STEP = 16_384  # events between checks that the warming is still wanted


class Teacher:
    """One shadow per run, used by one thread at a time."""

    def __init__(self) -> None:
        self._shadows: dict[int, Shadow] = {}
        self._lock = Lock()
        self.unfollowable: dict[int, str] = {}  # runs whose log the shadow cannot follow, and why

    def shadow(self, run: Run) -> Shadow:
        shadow = self._shadows.get(run.key)
        if shadow is None or shadow.table is not run.table:
            shadow = self._shadows[run.key] = Shadow(run.table, run.metadata.get("quantum"))
        return shadow

    def narrate(self, run: Run) -> str:
        k = run.cursor.k
        if k < 0:
            return "before the first event: → steps all panes together"
        if self.follows(run):
            with self._lock:
                if self._at(run, k - 1) is not None:
                    try:
                        return narrate(run.table, run.timeline, k, self.shadow(run))
                    except ShadowMismatch as mismatch:
                        self.refuse(run, mismatch)
        return narrate(run.table, run.timeline, k, replicas=run.replicas)

    def order(self, run: Run) -> list[tuple[str, str]] | None:
        """Who is served next and with what, for schedulers that serve in an order (None for
        those that pick by the smallest number, whose meter band already shows it)."""
        if not self.follows(run):
            return None
        with self._lock:
            sched = self._at(run, run.cursor.k)
            order = sched.serving_order() if sched is not None else None
        if order is None:
            return None
        users = run.table.users
        return [(users[user] if isinstance(user, int) else str(user), note) for user, note in order[:ORDER_SHOWN]]


    def follows(self, run: Run) -> bool:
        """Whether the run's panes show a shadow (and its log has not proved unfollowable)."""
        replicas = run.replicas
        own_schedulers = replicas is not None and replicas.split  # one shadow follows one scheduler, not one per replica
        return _serves_in_order(run) and run.key not in self.unfollowable and not own_schedulers

    @staticmethod
    def warmed(run: Run, cancelled: Callable[[], bool]) -> Shadow | None:
        """On a worker: a shadow driven through the run's whole (loaded) log, for ``adopt``;
        None if cancelled. ShadowMismatch if the log cannot be followed."""
        shadow = Shadow(run.table, run.metadata.get("quantum"))
        last = len(run.table) - 1
        for start in range(0, last + 1, WARM_STEP):
            if cancelled():
                return None
            shadow.at(min(start + WARM_STEP, last))
        return shadow

    def adopt(self, run: Run, warmed: Shadow) -> None:
        """Give the run's shadow the copies of one warmed on a worker, so far jumps are quick."""
        with self._lock:
            self.shadow(run).adopt(warmed)

    def _at(self, run: Run, k: int) -> Scheduler | None:
        """The shadowed scheduler after event k, or None when the log cannot be followed
        (DRR priced by the estimator: a head priced at a visit may have cost otherwise at
        its dispatch; or a gap). A loaded log that cannot be followed is not tried again."""
        try:
            return self.shadow(run).at(k)
        except ShadowMismatch as mismatch:
            self.refuse(run, mismatch)
            return None

    def refuse(self, run: Run, mismatch: ShadowMismatch) -> None:
        """Note that the run's log cannot be followed (its panes narrate from the log alone)."""
        if not run.loading:  # while loading, the missing piece may still come
            self.unfollowable[run.key] = str(mismatch)


def _serves_in_order(run: Run) -> bool:
    """Whether a shadow has something to show: schedulers that pick the smallest number
    (SFQ, VTC) need none, their state is the meter band, rebuilt from the log alone; and
    before its first events a run has not said its settings (DRR's quantum) yet."""
    traits = run.table.traits
    return traits is not None and not traits.picks_smallest and len(run.table) > 0
