"""Memory and time at scale: `sfqtui simulate` on 1M, 5M and 10M requests (issue 8 §4).

Production scenario, 2,000 users, 64 slots, explicit cost and service_s (`--with-cost`;
`--estimated` leaves them out, so the cost estimator and the service model price every
request). For each size, prints simulate's wall time and the peak anonymous memory
(RssAnon) of its process tree, then the growth from 5M to 10M requests.
Targets: at most 1 GB at 5M requests; at most 25% more at 10M than at 5M; the first
events of the 5M log on the dashboard's screen within 0.35x the time of replay_bench.py's
minimal replay of 1M requests (timed here on the 1M trace).

Traces are made once in --dir (named t1m.parquet, t5m.parquet, ...; e5m.parquet with
--estimated) and reused; the logs go to a temporary directory.

Usage: python benchmarks/scale_bench.py [--dir /tmp/scale] [--sizes 1000000 5000000 10000000] [--estimated]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memory import run_measured

USERS = 2000
SLOTS = 64
TARGET_MB = 1024
TARGET_GROWTH = 0.25
TARGET_FIRST_EVENTS = 0.35  # time to the first events on screen from the 5M log, over the minimal replay of 1M


def label(requests: int) -> str:
    return f"{requests // 1_000_000}m" if requests % 1_000_000 == 0 else f"{requests // 1000}k"


def trace_for(directory: Path, requests: int, estimated: bool) -> Path:
    """The production trace of this size, made if it is not there yet."""
    path = directory / f"{'e' if estimated else 't'}{label(requests)}.parquet"
    if not path.exists():
        sfqtui = Path(sys.executable).with_name("sfqtui")
        command = [str(sfqtui), "gen", "production", "-o", str(path), "--requests", str(requests), "--users", str(USERS)]
        subprocess.run(command + ([] if estimated else ["--with-cost"]), check=True, stdout=subprocess.DEVNULL)
    return path


def simulate_figures(trace: Path, log: Path) -> tuple[float, float]:
    """(seconds, peak tree RssAnon in MB) of `sfqtui simulate` writing ``log``."""
    sfqtui = Path(sys.executable).with_name("sfqtui")
    return run_measured([str(sfqtui), "simulate", str(trace), "--slots", str(SLOTS), "-o", str(log)], stdout=subprocess.DEVNULL)


def dashboard_figures(log: Path) -> float | None:
    """The dashboard on the 5M-request log (issue 8 §4): time to the first events on screen
    (target 1 s) and the peak RssAnon of the app's process tree, its audit child included
    (target under 2 GB), from dashboard_bench.py, which also times steps and seeks.
    Returns the seconds to the first events on screen."""
    bench = Path(__file__).with_name("dashboard_bench.py")
    output = subprocess.run([sys.executable, str(bench), "--log", str(log)], check=True, capture_output=True, text=True).stdout
    first = None
    for line in output.splitlines():
        if any(figure in line for figure in ("first events", "loaded after", "step forward", "seek", "peak anonymous memory")):
            print(f"dashboard on the 5M log: {line.split(': ', 1)[1]}", flush=True)
        if "first events on screen after" in line:
            first = float(line.rsplit("after ", 1)[1].rstrip(" s"))
    return first


def minimal_replay_seconds(trace: Path) -> float:
    """The yardstick of replay_bench.py (a minimal heap replay end to end), on ``trace``: best of 3."""
    sys.path.insert(0, str(Path(__file__).parent))
    from minimal_replay import minimal_replay

    with tempfile.TemporaryDirectory() as tmp:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            minimal_replay(trace, Path(tmp) / "minimal.parquet", SLOTS)
            times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/scale"), help="where the traces are made and kept")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000, 10_000_000])
    parser.add_argument("--estimated", action="store_true", help="traces without cost and service_s columns")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    peaks: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for requests in args.sizes:
            trace = trace_for(args.dir, requests, args.estimated)
            log = Path(tmp) / f"log-{label(requests)}.parquet"
            seconds, peak_mb = simulate_figures(trace, log)
            peaks[requests] = peak_mb
            print(f"simulate {label(requests):>4}: {seconds:7.1f} s, peak RssAnon {peak_mb:7,.0f} MB"
                  f"{f' (target <= {TARGET_MB:,} MB)' if requests == 5_000_000 else ''}", flush=True)
            if requests == 5_000_000:
                first = dashboard_figures(log)
                if first is not None:
                    yardstick = minimal_replay_seconds(trace_for(args.dir, 1_000_000, args.estimated))
                    print(f"first events on screen from the 5M log: {first:.2f} s = {first / yardstick:.2f}x the minimal replay of 1M requests "
                          f"({yardstick:.2f} s; target <= {TARGET_FIRST_EVENTS}x)", flush=True)
            else:
                log.unlink()
    if 5_000_000 in peaks and 10_000_000 in peaks:
        growth = peaks[10_000_000] / peaks[5_000_000] - 1
        print(f"growth from 5M to 10M requests: {growth:+.0%} (target <= {TARGET_GROWTH:+.0%})")


if __name__ == "__main__":
    main()
