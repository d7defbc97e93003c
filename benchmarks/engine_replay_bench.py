"""The core loop on the engine model against fixed service times, on one generated trace.

Prints requests/s of the core loop alone (trace in memory, full event rows, no I/O; CPU time,
which a machine shared with other work disturbs less than the wall clock; medians over rounds
that run every replay in turn) for:
- fixed slots (semantics §2: each request holds a slot for its service_s);
- the engine model: 8 engines of 8 places behind --slots 64, and behind --slots auto.

The engine model does more per request (a queue, a batch, a run of steps restarted each
time a batch changes, a start row), so it is slower; this says by how much.

Usage: python benchmarks/engine_replay_bench.py [--requests N] [--users N] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.limits import LimitSettings
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.trace.load import load_trace

ENGINES, PLACES, SLOTS = 8, 8, 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5,
                        help="rounds of every replay in turn; each ratio is the median of the rounds' ratios (a round's replays "
                             "run a few seconds apart, so a load that comes and goes on a shared machine touches all three alike)")
    args = parser.parse_args()
    model = EngineModel(max_num_seqs=PLACES)
    configs = {
        f"fixed slots ({SLOTS}), service_s": ReplayConfig("sfq", SLOTS),
        f"engine model, {ENGINES} x {PLACES} places, --slots {SLOTS}": ReplayConfig("sfq", SLOTS, engine=EngineSettings(model, ENGINES)),
        f"engine model, {ENGINES} x {PLACES} places, --slots auto": ReplayConfig(
            "sfq", ENGINES * 2, engine=EngineSettings(model, ENGINES, auto=LimitSettings())),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.parquet"
        subprocess.run([str(Path(sys.executable).with_name("sfqtui")), "gen", "production", "-o", str(path), "--requests", str(args.requests),
                        "--users", str(args.users), "--with-cost"], check=True, stdout=subprocess.DEVNULL)
        trace = load_trace(path).trace
    took: dict[str, list[float]] = {label: [] for label in configs}
    events: dict[str, int] = {}
    for _ in range(args.repeats):
        for label, config in configs.items():
            started = time.process_time()
            replay = Replay(trace, config)
            for _ in replay.run():
                pass
            took[label].append(time.process_time() - started)
            events[label] = len(replay.log)
    fixed = took[next(iter(configs))]
    for label, times in took.items():
        middle = statistics.median(times)
        ratio = statistics.median(t / f for t, f in zip(times, fixed))
        print(f"{label}: {len(trace) / middle:,.0f} requests/s (median {middle:.2f} s CPU, {events[label]:,} events, "
              f"{ratio:.1f}x fixed slots' time)")


if __name__ == "__main__":
    main()
