"""What a dashboard will open, checked before it opens.

A file or setting the dashboard could not show ends the command with one line and exit
status 2, as every other command does, instead of an empty pane and a toast: each log's
footer and first rows (what the first screen shows; the rest is checked as the dashboard
reads it, so that opening a log never waits for its size), each trace validated once, and
every run of a trace (the main one and each --compare) set up as its replay will be, so
that what a scheduler needs from the trace (VTC: the token columns) is refused here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sfqtui.core.replay.plan import ReplayPlan
from sfqtui.runs.opening import Opening
from sfqtui.trace.chunks import TraceSource, open_trace
from sfqtui.trace.eventlog import validate_log
from sfqtui.trace.sources import FIRST_ROWS


def check_openings(openings: Sequence[Opening]) -> dict[Path, TraceSource]:
    """InputError for the first opening that cannot be shown; the traces opened, by path."""
    traces: dict[Path, TraceSource] = {}
    for opening in openings:
        if opening.is_log:
            validate_log(opening.path, head=FIRST_ROWS)
            continue
        source = traces.get(opening.path)
        if source is None:
            source = traces[opening.path] = open_trace(opening.path)
        ReplayPlan(source, opening.config)  # InputError for a setting this trace cannot be replayed with
    return traces
