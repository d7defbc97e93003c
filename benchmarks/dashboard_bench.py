"""Dashboard responsiveness on a 1M-request trace (production scenario, 1,000 users, 64 slots).

Prints, for a trace replayed inside the app and for its saved event log:
- time from launch to the first frame showing events (target < 1 s);
- time until the whole log is loaded;
- a step forward and a step back, from the action to the end of the screen refresh it
  causes (median, 95th percentile and worst of 200; target < 16 ms, a frame at 60 fps). Textual paces
  screen updates at 60 fps, so a refresh waits up to 16.7 ms for its frame whatever it
  costs; the measurements run with TEXTUAL_FPS=1000 so that the figure is the work of a
  step, not the wait for the next frame. Pilot key presses are not used for timing
  because Pilot's own wait (about 100 ms here) would swamp the figure;
- a seek to a random event (of 50; target < 100 ms), and against a repaint in pairs (target: at most 3 repaints);
- the state rebuild alone: state at a random event from its checkpoint, plus the
  explanation, without drawing (of 300);
- peak anonymous memory (RssAnon) of the app's process tree, the audit's child included
  (target: under 2 GB for a 5M-request log);
- the same with SFQ and DRR side by side on the trace (`panes`: both panes drawn per
  step; target: events within 1 s, a step at or under 16 ms, memory at most twice one run's).

Usage: python benchmarks/dashboard_bench.py [--requests N] [--trace T] [--log LOG] [--only trace|log|panes ...]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from memory import TreePeak

from sfqtui.core.analysis.explain import explain_dispatch
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from sfqtui.ui.app import SfqApp
from sfqtui.ui.loading.messages import EventsLoaded


class TimedApp(SfqApp):
    """Records when the first frame is painted and when the first events are shown.

    Textual calls SfqApp's own message handlers too (it walks the class hierarchy), so
    these handlers only take the time.
    """

    painted: float | None = None
    first_frame: float | None = None
    launched: float = 0.0

    def on_mount(self) -> None:
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.painted = time.perf_counter() - self.launched

    def on_events_loaded(self, message: EventsLoaded) -> None:
        if self.first_frame is None:
            self.call_after_refresh(self._first_events)

    def _first_events(self) -> None:
        if self.first_frame is None:
            self.first_frame = time.perf_counter() - self.launched


async def measure(opening: Opening | list[Opening], label: str) -> None:
    with TreePeak(os.getpid()) as memory:
        await _measure(opening, label)
    print(f"{label}: peak anonymous memory of the process tree (app and audit child) {memory.peak_mb:,.0f} MB; of the app alone {memory.root_peak_mb:,.0f} MB")


async def _measure(opening: Opening | list[Opening], label: str) -> None:
    app = TimedApp(opening)
    app.launched = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        while app.first_frame is None:
            await pilot.pause(0.01)
        await pilot.pause()
        print(f"{label}: frame pacing {os.environ.get('TEXTUAL_FPS', 60)} fps")
        print(f"{label}: first frame painted after {app.painted:.2f} s; first events on screen after {app.first_frame:.2f} s")
        while app.loading:
            await pilot.pause(0.1)
        print(f"{label}: {len(app.table):,} events loaded after {time.perf_counter() - app.launched:.1f} s")
        while not app.checked:
            await pilot.pause(0.1)
        print(f"{label}: audited for invariant violations after {time.perf_counter() - app.launched:.1f} s")
        await app.workers.wait_for_complete()  # side by side: the shadows warm up after loading
        print(f"{label}: every worker done after {time.perf_counter() - app.launched:.1f} s")
        rng = random.Random(1)
        app.cursor.goto(str(len(app.table) // 2))
        app.refresh_views()
        await pilot.pause()

        async def timed(action) -> float:
            """From the action to the end of the screen refresh it causes."""
            done = asyncio.Event()
            started = time.perf_counter()
            action()
            app.call_after_refresh(done.set)
            await done.wait()
            return (time.perf_counter() - started) * 1000

        rebuilds = []
        for _ in range(300):
            k = rng.randrange(len(app.table))
            started = time.perf_counter()
            explain_dispatch(app.table, app.timeline, k, app.timeline.state_at(k))
            rebuilds.append((time.perf_counter() - started) * 1000)

        async def cpu_timed(action) -> float:
            """The CPU time (this process, every thread) from the action to the end of its refresh."""
            started = time.process_time()
            await timed(action)
            return (time.process_time() - started) * 1000

        # A step (and a seek) against a repaint, in pairs (a repaint, then the action) so that
        # both are taken while the machine runs at one speed: three rounds of pairs, each
        # round's ratio of medians, by wall time and by CPU time (less sensitive to a busy machine).
        async def paired(action, n: int) -> tuple[list[float], list[float]]:
            """Three rounds of n pairs (a repaint, then the action): each round's ratio of medians, by wall and by CPU time."""
            by_wall, by_cpu = [], []
            for _ in range(3):
                pairs = [(await timed(app.refresh), await timed(action)) for _ in range(n)]
                by_wall.append(statistics.median(s for _, s in pairs) / statistics.median(r for r, _ in pairs))
                pairs = [(await cpu_timed(app.refresh), await cpu_timed(action)) for _ in range(n)]
                by_cpu.append(statistics.median(s for _, s in pairs) / statistics.median(r for r, _ in pairs))
            return by_wall, by_cpu

        by_wall, by_cpu = await paired(lambda: app.action_step(1), 50)
        print(f"{label}: a step forward over a repaint of the whole screen (target <= 1x): by wall time min {min(by_wall):.2f}x, "
              f"median {statistics.median(by_wall):.2f}x; by CPU time min {min(by_cpu):.2f}x, median {statistics.median(by_cpu):.2f}x")
        by_wall, by_cpu = await paired(lambda: seek(app, str(rng.randrange(len(app.table)))), 20)
        print(f"{label}: a seek to a random event over a repaint of the whole screen (target <= 3x): by wall time min {min(by_wall):.2f}x, "
              f"median {statistics.median(by_wall):.2f}x; by CPU time min {min(by_cpu):.2f}x, median {statistics.median(by_cpu):.2f}x")
        repaints = [await timed(app.refresh) for _ in range(50)]
        forward = [await timed(lambda: app.action_step(1)) for _ in range(200)]
        back = [await timed(lambda: app.action_step(-1)) for _ in range(200)]
        dispatches = [await timed(app.action_next_dispatch) for _ in range(100)]
        seeks = []
        for _ in range(50):
            target = str(rng.randrange(len(app.table)))
            seeks.append(await timed(functools.partial(seek, app, target)))
        for name, values in (("rebuild the state at a random event and explain it (no drawing)", rebuilds),
                             ("a repaint of the whole screen (for scale)", repaints), ("step forward", forward), ("step back", back),
                             ("next dispatch", dispatches), ("seek to a random event", seeks)):
            p95 = statistics.quantiles(values, n=20)[-1]
            print(f"{label}: {name}: median {statistics.median(values):.1f} ms, 95th percentile {p95:.1f} ms, worst {max(values):.1f} ms")


CASES = {"trace": "trace replayed in the app", "log": "saved event log", "panes": "sfq and drr side by side on the trace"}


def seek(app: SfqApp, target: str) -> None:
    app.cursor.goto(target)
    app.refresh_views()


def openings(kind: str, path: Path, config: ReplayConfig) -> Opening | list[Opening]:
    if kind == "panes":
        return [Opening(path, is_log=False, config=replace(config, scheduler=name), slots_given=True) for name in ("sfq", "drr")]
    return Opening(path, is_log=kind == "log", config=config, slots_given=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--log", type=Path, help="measure this saved log only (no trace is generated)")
    parser.add_argument("--trace", type=Path, help="use this trace instead of generating one")
    parser.add_argument("--only", choices=list(CASES), action="append", help="measure only these cases (default: all)")
    parser.add_argument("--case", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    config = ReplayConfig("sfq", 64)
    if args.case:  # one measurement, in a process of its own so its memory figure is its own
        kind, path = args.case
        asyncio.run(measure(openings(kind, Path(path), config), CASES[kind]))
        return
    unpaced = {**os.environ, "TEXTUAL_FPS": "1000"}
    if args.log:
        subprocess.run([sys.executable, __file__, "--case", "log", str(args.log)], check=True, env=unpaced)
        return
    sfqtui = Path(sys.executable).with_name("sfqtui")
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace or Path(tmp) / "trace.parquet"
        log = Path(tmp) / "log.parquet"
        if not args.trace:
            subprocess.run([str(sfqtui), "gen", "production", "-o", str(trace), "--requests", str(args.requests),
                            "--users", "1000", "--with-cost"], check=True, stdout=subprocess.DEVNULL)
        cases = args.only or list(CASES)
        if "log" in cases:
            simulate(load_trace(trace), config, log)
        for kind in cases:
            subprocess.run([sys.executable, __file__, "--case", kind, str(log if kind == "log" else trace)], check=True, env=unpaced)


if __name__ == "__main__":
    main()
