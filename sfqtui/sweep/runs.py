"""Running one sweep run, and running a few one after another in this process.

A run that raises is reported in its row (``error``) and the others go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from sfqtui.core.requests.trace import Trace
from sfqtui.sweep.measures import Measure
from sfqtui.sweep.plan import RunSettings

Row = dict[str, object]
Progress = Callable[[int, int], None]


def measured(measure: Measure, trace: Trace, run: RunSettings) -> Row:
    """One run's row: its settings, the measure's figures, its time and its error (None when it worked)."""
    started = time.perf_counter()
    try:
        figures, error = measure(trace, run.config()), None
    except Exception as exc:  # one bad run must not sink the sweep
        figures, error = {}, f"{type(exc).__name__}: {exc}"
    return {**run.as_row(), **figures, "seconds": time.perf_counter() - started, "error": error}


def run_in_process(runs: Sequence[RunSettings], traces: Mapping[str, Trace], measure: Measure,
                   progress: Progress | None = None) -> list[Row]:
    rows = []
    for run in runs:
        rows.append(measured(measure, traces[run.trace], run))
        if progress is not None:
            progress(len(rows), len(runs))
    return rows
