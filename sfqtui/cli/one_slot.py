"""A note when a trace replays on one slot only because nothing said otherwise.

A trace made by `gen` or `import` suggests a slot count; any other (one written by hand,
by `proxy --record`, by an older import) replays on one slot when --slots is not given,
and a busy trace then queues for hours without a word. The note says so, when its
requests would finish, and the --slots that keeps up with its load (docs/traces.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sfqtui.core.pricing.service import TokenServiceModel
from sfqtui.trace.offered_load import duration, one_slot
from sfqtui.trace.write import read_metadata


def note_one_slot(path: Path, suggested: int | None, slots: int | None, service: TokenServiceModel | None = None) -> None:
    """Print the note on stderr when ``path`` replays on one slot by default (``suggested``:
    the trace's own slot count; ``slots``: the --slots given) and one slot cannot keep up."""
    if slots is not None or suggested is not None or "capacity" in read_metadata(path):  # a recording's limits set the slots
        return
    found = one_slot(path, service or TokenServiceModel())
    enough = found.suggested
    if enough is None or enough <= 1:
        return
    print(f"note: {path.name} suggests no slot count and --slots is not given, so it replays on 1 slot: its last request "
          f"completes at t = {duration(found.makespan_s)}, after {duration(found.span_s)} of arrivals; "
          f"--slots {enough:,} keeps up with its load (docs/traces.md)", file=sys.stderr)
