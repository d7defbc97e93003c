"""Ctrl-C during `sfqtui sweep`: one line, the local cluster closed, exit 130."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIGINT_BIT = 1 << (signal.SIGINT - 1)


def catches_sigint(pid: int) -> bool:
    """Whether the process has a handler for SIGINT (Linux: the SigCgt mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & SIGINT_BIT)
    return False


def session(sid: int) -> set[int]:
    """The processes of a session (Linux: the sixth field of /proc/PID/stat), but its leader."""
    members = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == sid and int(stat.parent.name) != sid:
            members.add(int(stat.parent.name))
    return members


def until(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"never saw {what}")
        time.sleep(0.1)


@pytest.mark.long
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads signal masks in /proc")
def test_ctrl_c_during_a_sweep_says_interrupted_closes_the_cluster_and_exits_130() -> None:
    # Enough runs that the sweep is still working when Ctrl-C comes.
    sweep = subprocess.Popen(
        [sys.executable, "-m", "sfqtui", "sweep", "traces/production-20k.parquet", "--schedulers", "sfq,drr,fifo,rr,vtc",
         "--slots", "1,2,3,4,5,6,7,8", "--workers", "2"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)  # its own group, as a terminal's job
    try:
        until(lambda: len(session(sweep.pid)) >= 2 and catches_sigint(sweep.pid), "the workers started and the sweep listening again")
        os.killpg(sweep.pid, signal.SIGINT)  # what Ctrl-C does: every process of the foreground group gets it
        out, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert (sweep.returncode, err, out) == (130, "sfqtui: interrupted\n", "")
    until(lambda: not session(sweep.pid), "the workers gone", timeout=30)
