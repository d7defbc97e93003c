"""First paint (issue 34 §5): from launching `sfqtui replay LOG` to its first events on screen, for a
small event log and a large one, and their ratio.

Each launch is the command as a user types it, in a pseudo-terminal of a fixed size
(tests/terminal.py), timed until the log's first event is drawn: its row in the event log
(seq, time, kind, user, request id), found by its request id, which nothing else shows.
Target: the large log's time at most 1.2x the small log's; a user waits for the program to
start, never for the file's size.

The logs are made once in --dir from production traces (2,000 users, 64 slots, as
scale_bench.py makes them: t10k.parquet, t5m.parquet, ...) and reused.

Usage: python benchmarks/first_paint_bench.py [--dir /tmp/scale] [--small 10000] [--large 5000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from scale_bench import SLOTS, label, trace_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' terminal, as the tests import it
from tests.terminal import Terminal  # after the tests are on the path

TARGET_RATIO = 1.2
SIZE = (160, 48)


def log_for(directory: Path, requests: int) -> Path:
    """The event log of the production trace of this size, made if it is not there yet."""
    path = directory / f"log-{label(requests)}.parquet"
    if not path.exists():
        sfqtui = Path(sys.executable).with_name("sfqtui")
        trace = trace_for(directory, requests, estimated=False)
        subprocess.run([str(sfqtui), "simulate", str(trace), "--slots", str(SLOTS), "-o", str(path)], check=True, stdout=subprocess.DEVNULL)
    return path


def first_request(log: Path) -> str:
    return str(pq.ParquetFile(log).read_row_group(0, columns=["request_id"])["request_id"].drop_null()[0])


def launch_to_first_events(log: Path, request: str) -> float:
    """Seconds from launching the dashboard on ``log`` to ``request``'s first event drawn on its screen."""
    started = time.perf_counter()
    with Terminal("replay", str(log), size=SIZE) as terminal:
        terminal.wait_for(request, timeout=300)
        seconds = time.perf_counter() - started
        terminal.exit_after("q")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/scale"), help="where the traces and logs are made and kept")
    parser.add_argument("--small", type=int, default=10_000, help="requests in the small log's trace")
    parser.add_argument("--large", type=int, default=5_000_000, help="requests in the large log's trace")
    parser.add_argument("--repeat", type=int, default=5, help="launches of each, alternated (the median is kept)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    logs = {size: log_for(args.dir, size) for size in (args.small, args.large)}
    requests = {size: first_request(log) for size, log in logs.items()}
    times: dict[int, list[float]] = {size: [] for size in logs}
    launch_to_first_events(logs[args.small], requests[args.small])  # warm the file cache and the interpreter's bytecode
    for _ in range(args.repeat):  # alternated, so both see the machine at the same load
        for size, log in logs.items():
            times[size].append(launch_to_first_events(log, requests[size]))
    for size, log in logs.items():
        events = pq.read_metadata(log).num_rows
        print(f"{label(size):>4} requests ({events:,} events): first events on screen after median {statistics.median(times[size]):.2f} s "
              f"(best {min(times[size]):.2f} s, worst {max(times[size]):.2f} s)", flush=True)
    ratio = statistics.median(times[args.large]) / statistics.median(times[args.small])
    best = min(times[args.large]) / min(times[args.small])  # on a busy machine, the least disturbed launches
    print(f"large over small: median {ratio:.2f}x, best {best:.2f}x (target <= {TARGET_RATIO}x)")


if __name__ == "__main__":
    main()
