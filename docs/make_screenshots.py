"""Export the SVG screenshots used in docs/guide.md, from the app itself.

Usage: python docs/make_screenshots.py [OUTPUT_DIR]   (default: docs/img)

tests/test_docs.py runs this into a temporary folder, so the script keeps working;
rerun it after changing the screen and commit the new images.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.ui.app import SfqApp
from sfqtui.runs.opening import Opening

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"

# (file name, trace, scheduler, keys to press, terminal size)
SHOTS = [
    ("seed-example-tie.svg", "seed-example.parquet", "sfq", ["n"], (120, 34)),
    ("seed-example-step3.svg", "seed-example.parquet", "sfq", ["n", "n", "n"], (120, 34)),
    ("demo-heavy-user.svg", "demo.parquet", "sfq", ["g", *"160", "enter", "n"], (120, 34)),
    ("demo-idle-reset.svg", "demo.parquet", "sfq", ["g", *"330", "enter", "r"], (120, 34)),
    ("trickle-sfq-reset.svg", "trickle.parquet", "sfq-reset", ["g", *"900", "enter", "u", *"trickle", "enter"], (120, 34)),
    ("heavy-vs-light-drr.svg", "heavy-vs-light.parquet", "drr", ["g", *"200", "enter", "n"], (120, 34)),
    ("calibration-view.svg", "calibration.parquet", "sfq", ["c"], (120, 34)),
]


async def shoot(out: Path, name: str, trace: str, scheduler: str, keys: list[str], size: tuple[int, int]) -> None:
    app = SfqApp(Opening(TRACES / trace, is_log=False, config=ReplayConfig(scheduler)))
    async with app.run_test(size=size) as pilot:
        while app.loading or not app.checked:
            await pilot.pause(0.02)
        for key in keys:
            await pilot.press(key)
        await app.workers.wait_for_complete()  # a view that measures on a worker (calibration)
        await pilot.pause()
        app.save_screenshot(filename=name, path=str(out))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        asyncio.run(shoot(out, *shot))
        print(f"wrote {out / shot[0]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
