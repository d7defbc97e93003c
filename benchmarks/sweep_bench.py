"""Sweep speed-up: 8 runs of a 1M-request trace on a 2-worker Dask LocalCluster against
the same 8 runs one after another in this process.

The runs: sfq and drr x ratio scope global and user x 32 and 64 slots, each measured as
`sfqtui sweep` does (a replay and the `compare` figures). The trace is loaded once for
both. The Dask time counts everything the sweep command pays for: starting the cluster,
sending the trace to both workers, the runs, and closing the cluster. The goal is a
ratio (Dask / one after another) at or under 0.6 on a 2-core machine.

Run it on an otherwise idle machine. Linux shares the CPUs fairly between sessions
(autogroups), not between processes: while another session keeps a core busy, the
workers of this one together get about one core, no more than the single process, and
the ratio says nothing about Dask. The CPU times printed tell the two apart: the
workers' CPU time over the single process's is what distributing the runs costs.

Usage: python benchmarks/sweep_bench.py [--requests N] [--users N] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sfqtui.sweep.cluster import dask_client, run_on_dask
from sfqtui.sweep.measures import fairness_figures
from sfqtui.sweep.plan import plan_runs
from sfqtui.sweep.runs import run_in_process
from sfqtui.trace.load import load_trace


def cpu_seconds() -> float:
    """User and system CPU time of the calling process so far (run on each worker, or here)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sfqtui = Path(sys.executable).with_name("sfqtui")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.parquet"
        subprocess.run([str(sfqtui), "gen", "production", "-o", str(path), "--requests", str(args.requests),
                        "--users", str(args.users)], check=True, stdout=subprocess.DEVNULL)
        trace = load_trace(path).trace
    traces = {"production": trace}
    runs = plan_runs({"production": None}, ["sfq", "drr"], [32, 64], ["global", "user"])
    print(f"{len(runs)} runs of {len(trace):,} requests ({args.users} users)")

    print(f"load average before: {os.getloadavg()[0]:.1f}")
    started = time.perf_counter()
    with dask_client(workers=args.workers) as client:
        ready = time.perf_counter()
        cpu_before = sum(client.run(cpu_seconds).values())
        on_dask = run_on_dask(client, runs, traces, fairness_figures)
        dask_cpu = sum(client.run(cpu_seconds).values()) - cpu_before
        ran = time.perf_counter()
    dask_s = time.perf_counter() - started
    print(f"Dask, {args.workers} workers: {dask_s:.1f} s (cluster start {ready - started:.1f} s, "
          f"scatter and runs {ran - ready:.1f} s, close {started + dask_s - ran:.1f} s); "
          f"the workers used {dask_cpu:.1f} CPU s")

    started, cpu_before = time.perf_counter(), cpu_seconds()
    in_process = run_in_process(runs, traces, fairness_figures)
    serial_s = time.perf_counter() - started
    serial_cpu = cpu_seconds() - cpu_before
    print(f"one after another in this process: {serial_s:.1f} s, {serial_cpu:.1f} CPU s")

    failed = [row["error"] for row in on_dask + in_process if row["error"]]
    same = [{k: v for k, v in row.items() if k != "seconds"} for row in on_dask] == \
           [{k: v for k, v in row.items() if k != "seconds"} for row in in_process]
    for label, rows in (("on Dask", on_dask), ("in this process", in_process)):
        seconds = ", ".join(f"{row['seconds']:.1f}" for row in rows)
        print(f"each run {label}: {seconds} s")
    print(f"same rows both ways: {same}; failed runs: {len(failed)}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(f"CPU time on Dask / in this process: {dask_cpu / serial_cpu:.2f} (what distributing the runs costs)")
    print(f"ratio Dask / one after another: {dask_s / serial_s:.2f} (goal <= 0.6)")


if __name__ == "__main__":  # Dask's worker processes re-import this file: the guard keeps them from running it
    main()
