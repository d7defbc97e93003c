"""Time and peak memory of `sfqtui check` on a production log of N requests.

For each N it makes a trace (`sfqtui gen production --requests N --users 2000 --with-cost`)
and its log (`sfqtui simulate --slots 64`), or takes the logs given with --log, then runs
`sfqtui check` on each in a child process and prints its seconds and the peak anonymous
memory (RssAnon) of its process tree. The audit reads the log in batches, so the peak
grows only by what it must keep: per-user dispatch histories and backlog episodes, a few
tens of bytes per request.

--source DIR runs the check from the sfqtui package under DIR instead (for example an
older commit exported with `git archive`), to compare before and after on the same logs.

Usage: python benchmarks/audit_bench.py [--requests N ...] [--log LOG ...] [--source DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from memory import run_measured


def sfqtui(*args: str, source: Path | None = None) -> list[str]:
    """The command line that runs `sfqtui ARGS...` (from ``source`` when given)."""
    if source is None:
        return [sys.executable, "-m", "sfqtui", *args]
    return [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); from sfqtui.cli.app import main; "
            "sys.argv[0] = 'sfqtui'; main()", str(source), *args]


def make_log(requests: int, directory: Path) -> Path:
    trace, log = directory / "t.parquet", directory / "log.parquet"
    subprocess.run(sfqtui("gen", "production", "--requests", str(requests), "--users", "2000", "--with-cost", "-o", str(trace)),
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(sfqtui("simulate", str(trace), "--slots", "64", "-o", str(log)), check=True, stdout=subprocess.DEVNULL)
    return log


def measure(log: Path, source: Path | None) -> None:
    with open(os.devnull, "w") as quiet:
        seconds, peak_mb = run_measured(sfqtui("check", str(log), source=source), stdout=quiet)
    print(f"check {log}: {seconds:.1f} s, peak RssAnon {peak_mb:,.0f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--log", type=Path, nargs="+", help="check these logs instead of making them")
    parser.add_argument("--source", type=Path, help="run sfqtui from the package under this directory")
    args = parser.parse_args()
    if args.log:
        for log in args.log:
            measure(log, args.source)
        return
    for requests in args.requests:
        with tempfile.TemporaryDirectory() as tmp:
            log = make_log(requests, Path(tmp))
            print(f"{requests:,} requests", end=": ")
            measure(log, args.source)


if __name__ == "__main__":
    main()
