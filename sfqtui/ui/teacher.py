"""What the side-by-side panes say at each step: a narration line and the serving order.

Both come from the core: the narration from `narrate` (built from the state and the
scheduler registry), the order from a shadow of the real scheduler re-driven from the
run's log, so a DRR pane shows the active list and the visit in progress exactly as the
core's DRR holds them. One shadow is kept per run.
"""

from __future__ import annotations

from sfqtui.core.analysis.narrate import narrate
from sfqtui.core.log.shadow import Shadow
from sfqtui.runs.run import Run

ORDER_SHOWN = 40


class Teacher:
    def __init__(self) -> None:
        self._shadows: dict[int, Shadow] = {}

    def shadow(self, run: Run) -> Shadow:
        shadow = self._shadows.get(run.key)
        if shadow is None or shadow.table is not run.table:
            shadow = self._shadows[run.key] = Shadow(run.table, run.metadata.get("quantum"))
        return shadow

    def narrate(self, run: Run) -> str:
        k = run.cursor.k
        if k < 0:
            return "before the first event: → steps all panes together"
        return narrate(run.table, run.timeline, k, self.shadow(run) if _serves_in_order(run) else None)

    def order(self, run: Run) -> list[tuple[str, str]] | None:
        """Who is served next and with what, for schedulers that serve in an order (None for
        those that pick by the smallest number, whose meter band already shows it)."""
        if not _serves_in_order(run):
            return None
        order = self.shadow(run).at(run.cursor.k).serving_order()
        if order is None:
            return None
        users = run.table.users
        return [(users[user] if isinstance(user, int) else str(user), note) for user, note in order[:ORDER_SHOWN]]


def _serves_in_order(run: Run) -> bool:
    """Whether a shadow has something to show: schedulers that pick the smallest number
    (SFQ, VTC) need none, their state is the meter band, rebuilt from the log alone; and
    before its first events a run has not said its settings (DRR's quantum) yet."""
    traits = run.table.traits
    return traits is not None and not traits.picks_smallest and len(run.table) > 0
