"""Issue 24's acceptance: behind --slots auto, the emulated engine (6 places) keeps its own queue near empty and its
places busy, and 'light' gets the share of the engine's starts SFQ gives it, not the 20% an FCFS engine queue leaves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.slots_fairness import run


@pytest.mark.long
def test_auto_slots_keep_sfq_s_order_in_the_engine(keys_path: Path) -> None:
    result = run("auto", keys_path)
    print(result.summary())
    assert result.failed == 0 and len(result.starts) > 100
    assert result.queue_p90 <= 1
    assert result.busy >= 0.85
    assert result.light_share >= 0.40
