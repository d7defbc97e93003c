"""Peak anonymous memory (RssAnon) of a process tree, sampled while it runs.

RssAnon leaves out file pages (a memory-mapped file, shared libraries), which the kernel
can drop at will; it is the memory a process really holds.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def rss_anon_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def tree(pid: int) -> list[int]:
    """pid and all its descendants."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                children = Path(f"/proc/{p}/task/{task}/children").read_text().split()
                todo += [int(c) for c in children]
        except (FileNotFoundError, ProcessLookupError):
            pass
    return found


class TreePeak:
    """Samples the summed RssAnon of a process tree every ``interval`` seconds (and of its root alone)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval = pid, interval
        self.peak_kb = 0
        self.root_peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            sizes = {p: rss_anon_kb(p) for p in tree(self.pid)}
            self.peak_kb = max(self.peak_kb, sum(sizes.values()))
            self.root_peak_kb = max(self.root_peak_kb, sizes.get(self.pid, 0))
            time.sleep(self.interval)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return self.peak_kb / 1024

    @property
    def root_peak_mb(self) -> float:
        return self.root_peak_kb / 1024


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float  # user and system time of the command, all its threads (and any children it waited for)
    peak_mb: float  # peak RssAnon of its process tree


def measure(command: Sequence[str], **kwargs: Any) -> Measured:
    """Run a command to the end and measure it."""
    started = time.perf_counter()
    child = subprocess.Popen(list(command), **kwargs)
    with TreePeak(child.pid) as peak:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, list(command))
    return Measured(wall, usage.ru_utime + usage.ru_stime, peak.peak_mb)


def run_measured(command: Sequence[str], **kwargs: Any) -> tuple[float, float]:
    """Run a command to the end; (seconds, peak tree RssAnon in MB)."""
    measured = measure(command, **kwargs)
    return measured.wall_s, measured.peak_mb
