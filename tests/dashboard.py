"""Helpers for driving the dashboard in tests."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget

from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.ui.app import SfqApp

TRACES = Path(__file__).resolve().parents[1] / "traces"
SIZE = (120, 34)


def dashboard(trace: str | Path = "seed-example.parquet", scheduler: str = "sfq", is_log: bool = False) -> SfqApp:
    path = trace if isinstance(trace, Path) else TRACES / trace
    return SfqApp(Opening(path, is_log=is_log, config=ReplayConfig(scheduler)))


async def settle(pilot: Pilot, analysed: bool = True) -> None:
    """Wait until the log is loaded (and audited), then let the screen catch up."""
    app = pilot.app
    assert isinstance(app, SfqApp)
    for _ in range(400):
        if not app.loading and (app.checked or not analysed or app.table.scheduler in ("fifo", "rr")):
            break
        await pilot.pause(0.02)
    await pilot.pause()


def text_of(widget: Widget) -> str:
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)


def screen_text(app: App) -> str:
    return app.export_screenshot()
