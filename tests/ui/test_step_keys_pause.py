"""`sfqtui demo` plays at once; a step key (→, ←, n, p, and the others that move the cursor)
pauses play, then steps, so that the step it asked for is the one on screen. Space plays again."""

from __future__ import annotations

import pytest

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.scenarios import DEMO_TRACE
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.status_line import StatusLine
from tests.dashboard import SIZE, settle, text_of, until, without_audit


def demo() -> SfqApp:
    """The dashboard as `sfqtui demo` opens it."""
    return SfqApp(Opening(path=DEMO_TRACE, is_log=False, config=ReplayConfig()), autoplay=True)


@pytest.mark.parametrize("key", ["right", "left", "n", "p", "end", "home"])
async def test_a_step_key_pauses_the_demo_then_steps(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    app = demo()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, analysed=False)
        await until(pilot, lambda: app.player.playing and app.cursor.k >= 3, "the demo to play a few events")
        before = app.cursor.k
        await pilot.press(key)
        stepped = app.cursor.k
        assert not app.player.playing
        # where it stepped to (play may have moved the cursor on between reading it and the key)
        assert {"right": stepped > before, "left": stepped >= 0, "n": app.table.kind_name(stepped) == "dispatch",
                "p": app.table.kind_name(stepped) == "dispatch", "end": stepped == len(app.table) - 1, "home": stepped == -1}[key]
        await pilot.pause(0.3)
        assert app.cursor.k == stepped and "paused" in text_of(app.query_one(StatusLine))
        await pilot.press("space")
        assert app.player.playing
