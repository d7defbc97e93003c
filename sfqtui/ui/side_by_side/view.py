"""Runs side by side: one pane per run, stepped in lockstep, with where their orders part.

The first run leads; the app moves its cursor and puts the others at the same moment
(by time or by dispatch number). Above the panes, one line says how the panes are paired
(and where a pane's log has no such moment), where each other run's dispatch order first
differs from the leader's (beside a run of several replicas: what each sent there and from
which replica), and how many positions differ so far; a pane whose current dispatch
differs shows it in red.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal

from sfqtui.core.events import DISPATCH
from sfqtui.core.log.divergence import Divergence
from sfqtui.core.log.lockstep import HOW, Mode, pair
from sfqtui.core.log.table import EventTable
from sfqtui.runs.run import Run
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.replicas import run_label
from sfqtui.ui.side_by_side.run_pane import RunPane
from sfqtui.ui.widgets.text_view import TextView

Narrator = Callable[[Run], str]
Orderer = Callable[[Run], "list[tuple[str, str]] | None"]


class DivergenceLine(TextView):
    DEFAULT_CSS = "DivergenceLine { height: 2; padding: 0 1; overflow: hidden hidden; }"


class SideBySide(Horizontal):
    # The line docked above, the panes in a row under it: no container of their own, which
    # the screen would walk and draw again on every step.
    DEFAULT_CSS = "SideBySide { height: 1fr; } SideBySide > DivergenceLine { dock: top; }"

    def __init__(self, runs: Sequence[Run], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._keys = [run.key for run in runs]
        self._divergences: dict[int, Divergence] = {}

    def compose(self) -> ComposeResult:
        self._line = DivergenceLine()
        self._panes = {key: RunPane(key, id=f"pane-{key}") for key in self._keys}
        yield self._line
        yield from self._panes.values()

    def _divergence(self, leader: Run, other: Run) -> Divergence:
        found = self._divergences.get(other.key)
        if found is None or found.a is not leader.table or found.b is not other.table:
            found = self._divergences[other.key] = Divergence(leader.table, other.table)
        return found

    def show(self, runs: Sequence[Run], frame_of: Callable[[Run], Frame], lockstep: Mode,
             narrate: Narrator, order: Orderer) -> None:
        if any(run.key not in self._panes for run in runs):
            return  # a run was replaced (a re-run): the app lays the panes out again
        leader = runs[0]
        n = leader.cursor.dispatch_number
        lead = run_label(leader)
        lines = [Text.assemble(("lockstep ", "dim"), (f"by {lockstep}", "bold"), (f" ({HOW[lockstep]}; l switches)  ", "dim"),
                               f"leader {lead} at dispatch #{n + 1:,}" if n >= 0 else f"leader {lead}",
                               no_wrap=True, overflow="ellipsis")]
        differing: dict[int, bool] = {}
        for other in runs[1:]:
            divergence = self._divergence(leader, other)
            count = divergence.differing_until(n)
            differing[other.key] = divergence.differs(n) and _at_dispatch(other, n)
            first = divergence.first
            name = run_label(other)
            if first is None or first > n:
                said = f"{name}: same order as {lead} so far"
            else:
                parted = _parted(leader, other, first) if leader.table.replicated or other.table.replicated else ""
                said = (f"{name}: orders first differ at dispatch #{first + 1:,}{parted}; "
                        f"{count:,} of {n + 1:,} positions differ so far")
            missing = pair(leader.table, leader.cursor.k, other.table, lockstep).missing
            if missing:
                said += f"; its nearest moment ({missing})"
            lines.append(Text(said, style="bold red" if differing[other.key] else "", no_wrap=True, overflow="ellipsis"))
        differing[leader.key] = any(differing.values()) and _at_dispatch(leader, n)
        self._line.set_text([Text(" · ").join(lines)])
        for run in runs:
            self._panes[run.key].show(frame_of(run), narrate(run), differing[run.key], order(run))


def _parted(leader: Run, other: Run, n: int) -> str:
    """What each run sent at dispatch position n, and from which replica: where a replicated
    run's order leaves the other's."""

    def sent(table: EventTable) -> str:
        k = table.dispatches[n]
        held = table.replica_of(k)
        return f"{table.user_name(k)}'s {table.request_id(k)}" + ("" if held is None else f" on replica {held}")

    return f" ({sent(other.table)} vs {sent(leader.table)})"


def _at_dispatch(run: Run, n: int) -> bool:
    """Whether the run's cursor stands on its dispatch number n."""
    k = run.cursor.k
    return n >= 0 and k >= 0 and run.table.kind[k] == DISPATCH and run.cursor.dispatch_number == n
