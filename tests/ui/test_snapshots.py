"""Snapshots of the main screen at fixed steps: fixed terminal size, bundled traces, nothing playing.

After a deliberate change of the screen, review the report of a failing run before
`pytest tests/ui/test_snapshots.py --snapshot-update`.
"""

from pathlib import Path

import pytest
from textual.pilot import Pilot
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.shares import SharesPanel
from tests.dashboard import TRACES, dashboard, settle, text_of, until
from tests.engine_starts_log import heavy_and_light, with_engine_starts

STEPS = {
    "start": [],
    "first-dispatch-tie": ["n"],
    "b-runs-ahead": ["n", "n", "n"],
    "second-tie-at-v3": ["n"] * 5,
    "end": ["end"],
}


@pytest.mark.parametrize("name", list(STEPS))
def test_seed_example(name: str, snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        for key in STEPS[name]:
            await pilot.press(key)
        await pilot.pause()

    assert snap_compare(dashboard("seed-example.parquet"), terminal_size=(120, 34), run_before=run_before)


def test_demo_at_the_first_idle_reset_in_100_by_30(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("r")
        await pilot.pause()

    assert snap_compare(dashboard("demo.parquet"), terminal_size=(100, 30), run_before=run_before)


def test_drr_on_heavy_vs_light(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("g", *"200", "enter", "n")
        await pilot.pause()

    assert snap_compare(dashboard("heavy-vs-light.parquet", scheduler="drr"), terminal_size=(120, 34), run_before=run_before)


def side_by_side(trace: str, slots: int, *schedulers: str) -> SfqApp:
    openings = [Opening(TRACES / trace, is_log=False, config=ReplayConfig(name, slots), slots_given=True) for name in schedulers]
    return SfqApp(openings, lockstep="dispatch")


def test_the_worked_example_under_sfq_and_drr_side_by_side(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press(*["n"] * 5)
        await pilot.pause()

    assert snap_compare(side_by_side("seed-example.parquet", 1, "sfq", "drr"), terminal_size=(160, 44), run_before=run_before)


def test_a_divergence_highlighted_side_by_side(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press(*["n"] * 16)
        await pilot.pause()

    assert snap_compare(side_by_side("heavy-vs-light.parquet", 4, "sfq", "drr"), terminal_size=(160, 44), run_before=run_before)


def test_fairness_at_engine_start_under_the_shares(snap_compare, tmp_path: Path) -> None:
    """A log whose engine reported starts: the shares pane says the run's worst gap at engine start against the one at dispatch."""
    log = with_engine_starts(heavy_and_light(tmp_path), tmp_path / "engine-starts.parquet")
    app = dashboard(log, is_log=True)

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await until(pilot, lambda: "at engine start" in text_of(app.query_one(SharesPanel)), "the line at engine start")
        await pilot.press("end")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 34), run_before=run_before)


def test_placement_per_engine_under_the_shares(snap_compare, tmp_path: Path) -> None:
    """A replay on two engines placed by prefix, opened as its log: the shares pane lists each
    engine's requests placed and in flight and the prompt tokens its cache held, up to the
    cursor; the why panel says where the dispatch went and what its engine found cached."""
    log = tmp_path / "placed.parquet"
    result = CliRunner().invoke(cli, ["simulate", str(TRACES / "multi-turn.parquet"), "--engines", "2", "--placement", "prefix", "-o", str(log)])
    assert result.exit_code == 0, result.output
    app = dashboard(log, is_log=True)

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await until(pilot, lambda: "at engine start" in text_of(app.query_one(SharesPanel)), "the line at engine start")
        await pilot.press("g", *"200", "enter", "n")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 34), run_before=run_before)
