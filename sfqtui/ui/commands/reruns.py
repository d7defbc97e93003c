"""The palette's re-runs: the leading run's trace replayed under other settings, in its
place or in a pane beside it, and a pane dropped. The app holds one ``Reruns``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from textual.notifications import SeverityLevel

from sfqtui.core.analysis.log_calibration import estimator_label
from sfqtui.core.numbers import count
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.runs.opening import Opening, rerunnable
from sfqtui.runs.run import Run
from sfqtui.ui.loading.open_runs import OpenRuns


class RerunsHost(Protocol):
    @property
    def open_runs(self) -> OpenRuns: ...

    def relayout(self) -> Awaitable[None]:
        """Compose the dashboard again for another set of runs."""
        ...

    def action_calibration(self) -> None: ...

    def refresh_views(self) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None) -> None: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...


class Reruns:
    def __init__(self, host: RerunsHost) -> None:
        self._host = host

    def _rerunnable(self) -> Opening | None:
        """The leading run's trace, or None (said on screen) for a saved log or a live stream."""
        opening = rerunnable(self._host.open_runs.current.opening)
        if opening is None:
            self._host.notify("a saved log cannot be re-run; open its trace instead", severity="warning")
        return opening

    async def _add(self, opening: Opening) -> None:
        runs = self._host.open_runs
        run = Run.of(opening, title=runs.current.title)
        runs.runs.append(run)
        await self._host.relayout()
        runs.start(run)

    async def compare_with(self, scheduler: str) -> None:
        """Add a pane: the leading run's trace replayed under another scheduler."""
        opening = self._rerunnable()
        if opening is not None:
            await self._add(opening.rerun(scheduler=scheduler))

    async def compare_estimator(self, estimator: EstimatorParams) -> None:
        """Add a pane: the leading run's trace replayed with another estimator; the calibration view then compares them."""
        opening = self._rerunnable()
        if opening is not None:
            await self._add(opening.rerun(estimator=estimator))
            self._host.action_calibration()

    async def drop_pane(self, key: int) -> None:
        runs = self._host.open_runs.runs
        runs[:] = [run for run in runs if run.key != key] or runs
        await self._host.relayout()
        self._host.refresh_views()

    def rerun(self, **changes: object) -> None:
        """Replay the same trace with another scheduler, slot count or estimator."""
        opening = self._rerunnable()
        if opening is None:
            return
        runs = self._host.open_runs
        was = runs.current.cursor.k
        runs.runs[0] = Run.of(opening.rerun(**changes), title=runs.current.title)
        if runs.side_by_side:
            self._host.call_later(self._host.relayout)  # the leading pane draws another run now
        runs.start(runs.current)
        said = {k: estimator_label(v.as_dict()) if isinstance(v, EstimatorParams) else count(v) if isinstance(v, int) else v
                for k, v in changes.items()}
        self._host.notify(f"re-running: {', '.join(f'{k}={v}' for k, v in said.items())} (the cursor was at seq {count(was)})", timeout=4)
