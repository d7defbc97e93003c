"""The invariant audit behind `x` (next violation, and the rule it breaks), run in a child process for big logs.

Auditing a million-request log is tens of seconds of pure Python. On a thread it would
share the interpreter lock with the UI and slow every step until it finished; a child
process runs on another core instead. It reads the same file in batches, or replays the
same trace chunk by chunk (replays are deterministic, so it rebuilds the log on screen),
so its memory does not grow with the log, and it sends back only the violations (the
rule, the event, what broke). Small logs are audited on the caller's thread: starting a process
costs more than their audit.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator

from sfqtui.core.analysis.audit import Replicas, Violation, audit, by_seq
from sfqtui.core.log.rows import LogRows, rows_from_replay
from sfqtui.core.replicas.settings import ReplicaSettings
from sfqtui.runs.opening import Opening
from sfqtui.trace.eventlog import iter_log_rows, output_weight_of, read_log_schema
from sfqtui.trace.sources import ReplaySource

IN_CHILD_FROM = 200_000  # events; below this the audit takes well under a second


def violations_of(opening: Opening) -> list[Violation]:
    """Where what ``opening`` opens breaks an invariant, and which, by event."""
    if opening.is_log:
        metadata = read_log_schema(opening.path)[0]
        output_weight = output_weight_of(metadata)
        replicas = Replicas(ReplicaSettings.from_metadata(metadata.get("replicas")), metadata.get("slots"))
    else:
        output_weight = opening.config.estimator.output_weight
        replicas = Replicas(opening.config.replicas)  # the slots may be the trace's suggestion: not checked
    return by_seq(audit(_rows(opening), output_weight, replicas).violations)


def violations(opening: Opening, events: int, cancelled: Callable[[], bool]) -> list[Violation] | None:
    """The violations of a loaded log of ``events`` events (None: cancelled)."""
    if events < IN_CHILD_FROM:
        return violations_of(opening)
    return audit_in_child(opening, cancelled)


def audit_in_child(opening: Opening, cancelled: Callable[[], bool]) -> list[Violation] | None:
    """Audit what ``opening`` opens in a child process; None if cancelled first (the child is
    then stopped). A failure in the child is raised here as a RuntimeError.

    A plain subprocess, not multiprocessing: while a Textual app runs, sys.stderr is its
    capture object, which multiprocessing cannot hand to a spawned child.
    """
    child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    request: bytes | None = pickle.dumps(opening)
    try:
        while True:
            try:
                answer, errors = child.communicate(request, timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                request = None  # sent; a retried communicate must not send it again
                if cancelled():
                    return None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if child.returncode != 0:
        last = errors.decode(errors="replace").strip().splitlines()[-1:] or [f"exit code {child.returncode}"]
        raise RuntimeError(f"the audit process failed: {last[0]}")
    return pickle.loads(answer)


def _rows(opening: Opening) -> Iterator[LogRows]:
    if opening.is_log:
        yield from iter_log_rows(opening.path)
        return
    source = opening.source()
    assert isinstance(source, ReplaySource)
    for columns, _arrived in source.replay.chunks():
        yield rows_from_replay(columns, source.loaded.trace, source.scheduler)


if __name__ == "__main__":  # the child: an Opening in on stdin, the violations out on stdout
    sys.stdout.buffer.write(pickle.dumps(violations_of(pickle.load(sys.stdin.buffer))))
