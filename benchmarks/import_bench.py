"""Import throughput and memory at Azure-2024-week scale.

The real week (tens of millions of rows) is not bundled, so this writes an Azure-2024-style
CSV (`TIMESTAMP` with a `+00:00` offset, `ContextTokens`, `GeneratedTokens`; CRLF line
ends) of N rows, then times `sfqtui import azure` on it in a child process and prints
rows/s and the child's peak memory: resident (which counts the memory-mapped CSV's
pages) and anonymous (what the import holds). Bounded memory means the anonymous peak
stays flat as N grows.

Usage: python benchmarks/import_bench.py [--rows N ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl


def write_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    chunk = 2_000_000
    start = np.datetime64("2024-05-10T00:00:00", "us")
    with path.open("wb") as out:
        out.write(b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n")
        done = 0
        while done < rows:
            n = min(chunk, rows - done)
            offsets = np.sort(rng.uniform(0, 7 * 86400e6, n)).astype("timedelta64[us]")
            frame = pl.DataFrame({
                "TIMESTAMP": (start + offsets).astype(str),
                "ContextTokens": rng.integers(1, 8000, n),
                "GeneratedTokens": rng.integers(1, 1000, n),
            }).with_columns(pl.col("TIMESTAMP").str.replace("T", " ") + "+00:00")
            out.write(frame.write_csv(include_header=False, line_terminator="\r\n").encode())
            done += n


# Runs `sfqtui ARGS...` and reports, when it exits, its peak resident memory and its peak
# anonymous memory (RssAnon, sampled every 20 ms). polars memory-maps the CSV, and the
# mapped pages it has read count in the resident figure though they are page cache the
# kernel can drop; the anonymous figure is what the import itself holds.
REPORTING_CHILD = """
import atexit, resource, sys, threading, time
peak = [0]
def sample():
    while True:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    peak[0] = max(peak[0], int(line.split()[1]))
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
atexit.register(lambda: print("peak_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "anon_kb", peak[0], file=sys.stderr))
from sfqtui.cli.app import main
sys.argv = ["sfqtui", *sys.argv[1:]]
main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    args = parser.parse_args()
    for rows in args.rows:
        with tempfile.TemporaryDirectory() as tmp:
            csv = Path(tmp) / "AzureLLMInferenceTrace_code_1week.csv"
            write_csv(csv, rows)
            started = time.perf_counter()
            child = subprocess.run([sys.executable, "-c", REPORTING_CHILD, "import", "azure", str(csv), "-o", str(Path(tmp) / "t.parquet")],
                                   capture_output=True, text=True)
            elapsed = time.perf_counter() - started
            if "peak_kb" not in child.stderr:
                raise SystemExit(child.stderr)
            figures = child.stderr.rsplit("peak_kb", 1)[1].split()
            peak_mb, anon_mb = int(figures[0]) / 1024, int(figures[2]) / 1024
            size_mb = csv.stat().st_size / 2**20
            print(f"{rows:,} rows ({size_mb:,.0f} MB of CSV): {elapsed:.1f} s, {rows / elapsed:,.0f} rows/s, "
                  f"peak resident {peak_mb:,.0f} MB (of which anonymous {anon_mb:,.0f} MB; the rest is the mapped CSV)")


if __name__ == "__main__":
    main()
