"""Export the SVG screenshots used in docs/guide.md and docs/tutorial.md, from the app itself.

Usage: python docs/make_screenshots.py [OUTPUT_DIR]   (default: docs/img)

tests/test_docs.py runs this into a temporary folder, so the script keeps working;
rerun it after changing the screen and commit the new images.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Callable

from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import SfqApp

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"
LESSON_TRACES = Path(tempfile.mkdtemp(prefix="sfqtui-shots-"))


def single(trace: str, scheduler: str) -> Callable[[], SfqApp]:
    return lambda: SfqApp(Opening(TRACES / trace, is_log=False, config=ReplayConfig(scheduler)))


def lesson(name: str) -> Callable[[], SfqApp]:
    """The app `sfqtui teach NAME` opens."""

    def make() -> SfqApp:
        chosen = LESSONS[name]
        trace = LESSON_TRACES / f"{name}.parquet"
        chosen.write(trace)
        openings = [Opening(trace, is_log=False, config=chosen.config(s), slots_given=True) for s in chosen.schedulers]
        return SfqApp(openings, lockstep=chosen.lockstep, lesson=chosen)

    return make


WIDE = (160, 46)
# (file name, the app, keys to press, terminal size)
SHOTS: list[tuple[str, Callable[[], SfqApp], list[str], tuple[int, int]]] = [
    ("seed-example-tie.svg", single("seed-example.parquet", "sfq"), ["n"], (120, 34)),
    ("seed-example-step3.svg", single("seed-example.parquet", "sfq"), ["n", "n", "n"], (120, 34)),
    ("demo-heavy-user.svg", single("demo.parquet", "sfq"), ["g", *"160", "enter", "n"], (120, 34)),
    ("demo-idle-reset.svg", single("demo.parquet", "sfq"), ["g", *"330", "enter", "r"], (120, 34)),
    ("trickle-sfq-reset.svg", single("trickle.parquet", "sfq-reset"), ["g", *"900", "enter", "u", *"trickle", "enter"], (120, 34)),
    ("heavy-vs-light-drr.svg", single("heavy-vs-light.parquet", "drr"), ["g", *"200", "enter", "n"], (120, 34)),
    ("calibration-view.svg", single("calibration.parquet", "sfq"), ["c"], (120, 34)),
    ("lesson-worked-example.svg", lesson("worked-example"), ["n"] * 5, WIDE),
    ("lesson-worked-example-end.svg", lesson("worked-example"), ["end"], WIDE),
    ("lesson-heavy-vs-light.svg", lesson("heavy-vs-light"), ["n"] * 16, WIDE),
    ("lesson-idle-return.svg", lesson("idle-return"), ["g", *"t=5.2", "enter", "n"], WIDE),
    ("lesson-trickle.svg", lesson("trickle"), ["g", *"t=30", "enter", "n"], WIDE),
    ("lesson-global-idle.svg", lesson("global-idle"), ["r", "n"], WIDE),
    ("lesson-weights.svg", lesson("weights"), ["n"] * 6, WIDE),
    ("lesson-estimate-vs-actual.svg", lesson("estimate-vs-actual"), ["g", *"t=300", "enter", "n"], WIDE),
]


async def shoot(out: Path, name: str, make: Callable[[], SfqApp], keys: list[str], size: tuple[int, int]) -> None:
    app = make()
    async with app.run_test(size=size) as pilot:
        while app.loading or not all(run.checked or run.audit_failure or not _audited(run) for run in app.runs):
            await pilot.pause(0.02)
        for key in keys:
            await pilot.press(key)
        await app.workers.wait_for_complete()  # views that measure on a worker (calibration, a lesson's outcome)
        await pilot.pause()
        app.save_screenshot(filename=name, path=str(out))


def _audited(run) -> bool:  # noqa: ANN001
    traits = run.table.traits
    return traits is not None and traits.audit is not None


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        asyncio.run(shoot(out, *shot))
        print(f"wrote {out / shot[0]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
