"""The command palette's entries: every key's action, exports of what is on screen, re-runs,
panes and estimators to compare."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import replace

from textual.app import SystemCommand
from textual.binding import Binding

from sfqtui.core.schedulers import REGISTRY, SCHEDULERS
from sfqtui.runs.opening import rerunnable
from sfqtui.ui.commands.export import export_log, export_shares, save_screenshot
from sfqtui.ui.commands.host import CommandHost
from sfqtui.ui.screens.calibration_view import estimator_choices

SLOT_CHOICES = (1, 2, 4, 8, 16, 32, 64)


def palette_commands(app: CommandHost) -> Iterable[SystemCommand]:
    for binding in app.BINDINGS:
        assert isinstance(binding, Binding)
        name, _, arg = binding.action.partition("(")
        if not app.check_action(name, ()):
            continue  # not here (the lesson menu outside a lesson)
        method = getattr(app, f"action_{name}")
        callback = functools.partial(method, int(arg.rstrip(")"))) if arg else method
        key = app.get_key_display(replace(binding, key=binding.key.split(",")[0]))
        yield SystemCommand(binding.description, f"{binding.description} (key {key})", callback)
    for title, suffix in (("CSV", ".csv"), ("Parquet", ".parquet")):
        yield SystemCommand(f"Export the event log ({title})", "The rows the log lists now (after d and f), with its columns",
                            functools.partial(export_log, app, suffix))
        yield SystemCommand(f"Export the shares table ({title})", "Every user's cost shares at the cursor",
                            functools.partial(export_shares, app, suffix))
    yield SystemCommand("Save a screenshot (SVG)", "The screen as it is now, as an SVG file", functools.partial(save_screenshot, app))
    opening = rerunnable(app.opening)
    if opening is not None:
        for name in SCHEDULERS:
            yield SystemCommand(f"Re-run with scheduler {name}", f"Replay this trace under {name}: {REGISTRY[name].title}",
                                lambda n=name: app.reruns.rerun(scheduler=n))
            yield SystemCommand(f"Compare with {name}", f"Add a pane: this trace under {name}, stepped beside the others",
                                lambda n=name: app.run_worker(app.reruns.compare_with(n), exit_on_error=False, description="adding a pane"))
        for slots in SLOT_CHOICES:
            yield SystemCommand(f"Re-run with {slots} slot{'s' if slots > 1 else ''}", "Replay with another slot count",
                                lambda s=slots: app.reruns.rerun(slots=s))
        estimator = opening.config.estimator
        for scope in ("global", "model", "user"):
            yield SystemCommand(f"Re-run with the output ratio learned per {scope}", "Estimator: ratio scope (docs/estimator.md)",
                                lambda s=scope: app.reruns.rerun(estimator=replace(estimator, scope=s)))
        for update in ("window", "ema", "cumulative"):
            yield SystemCommand(f"Re-run with ratio update {update}", "Estimator: how the ratio learns",
                                lambda u=update: app.reruns.rerun(estimator=replace(estimator, update=u)))
        for title, params in estimator_choices(estimator):
            yield SystemCommand(f"Compare estimator: {title}", "Add a pane: this trace priced by another estimator; the calibration view says who moved",
                                lambda p=params: app.run_worker(app.reruns.compare_estimator(p), exit_on_error=False, description="adding a pane"))
    for run in app.runs[1:]:
        yield SystemCommand(f"Drop the {run.scheduler} pane", "Stop comparing with this run",
                            lambda k=run.key: app.run_worker(app.reruns.drop_pane(k), exit_on_error=False, description="dropping a pane"))
