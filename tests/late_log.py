"""A log as a recording that joined a proxy's stream late would be (semantics §7), made from a replay."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.load import load_trace
from sfqtui.trace.schema import METADATA_KEY
from sfqtui.trace.simulate import simulate

TRACES = Path(__file__).resolve().parents[1] / "traces"
JOIN = 40  # the seq a late recording joined at


def late_log(tmp_path: Path) -> tuple[Path, Run]:
    """A whole log, and the same log as a recording that joined at seq JOIN would be: its
    events from there, and the state the whole log had there as its snapshot."""
    whole = tmp_path / "whole.parquet"
    simulate(load_trace(TRACES / "heavy-vs-light.parquet"), ReplayConfig("sfq", 2), whole)
    run = Run(Opening(whole, is_log=True, config=ReplayConfig())).load_all()
    run.cursor.k = JOIN
    state = run.state()
    users = [{"user": name, "meter": state.value[code], "queued": state.queued[code], "inflight": state.inflight_of[code]}
             for code, name in enumerate(run.table.users)]
    table = pq.read_table(whole)
    metadata = json.loads(table.schema.metadata[METADATA_KEY])
    metadata["snapshot"] = {"seq": JOIN, "v": state.v, "users": users}
    late = tmp_path / "late.parquet"
    schema_metadata = {**table.schema.metadata, METADATA_KEY: json.dumps(metadata).encode()}
    pq.write_table(table.filter(pc.greater(table["seq"], JOIN)).replace_schema_metadata(schema_metadata), late)
    return late, run
