"""A recording whose file cannot be written keeps what it still can.

The write fails for real: the recording runs in a process whose files may not grow past a
size (RLIMIT_FSIZE, as a full disk would refuse them), so the file's second row group is
refused and the log goes on in a file of the temporary folder, after a gap row that says
where its events start (what the first file held is lost with it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sfqtui.trace.eventlog import read_log

RECORD = r"""
import json, random, resource, signal, sys, time
from pathlib import Path
import pyarrow as pa
from sfqtui.attach import stream_log
from sfqtui.attach.stream import EVENT_SCHEMA

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing the process
stream_log.ROW_GROUP = 4096
rng = random.Random(1)

def batches(total):
    t = 0.0
    for start in range(0, total, 512):
        rows = []
        for seq in range(start, min(total, start + 512)):
            t += rng.random()
            rows.append({"seq": seq, "t": t, "kind": "arrive", "scheduler": "sfq", "request_id": f"r{seq}",
                         "user": f"u{rng.randrange(1000)}", "meter": rng.random() * 1e6, "v": rng.random() * 1e6, "weight": 1.0})
        yield pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)

def record(path, total, pace_s=0.0):
    writer = stream_log.StreamLogWriter(path, "test")
    for batch in batches(total):
        writer.write(batch)
        time.sleep(pace_s)  # events come over time, as from a stream: the writer's thread keeps up
    writer.close()
    return writer

folder = Path(sys.argv[1])
one_group = record(folder / "one.parquet", stream_log.ROW_GROUP).path.stat().st_size
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(one_group * 1.5), hard))  # room for one row group, not two
writer = record(folder / "x.parquet", 3 * stream_log.ROW_GROUP + 100, pace_s=0.01)
print(json.dumps({"problem": writer.problem, "saved_to": str(writer.saved_to), "rows": writer.rows, "lost": writer.lost}))
"""


def test_a_file_that_cannot_grow_sends_the_rest_to_a_fallback_after_a_gap_row(tmp_path: Path) -> None:
    spare = tmp_path / "tmp"
    spare.mkdir()
    done = subprocess.run([sys.executable, "-c", RECORD, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          env={"TMPDIR": str(spare), "PATH": ""}, check=True)
    result = json.loads(done.stdout)
    [fallback] = spare.glob("x-*.parquet")
    group, total = 4096, 3 * 4096 + 100
    # The second row group was refused, and the first went down with the file (the third too, when the
    # refusal is only known once it was handed over); what came after is saved, after a gap row.
    lost = result["lost"]
    assert lost in (2 * group, 3 * group) and result["saved_to"] == str(fallback) and result["rows"] == 1 + total - lost
    assert result["problem"] == (f"could not write {tmp_path / 'x.parquet'} (File too large); saved {1 + total - lost:,} events to "
                                 f"{fallback} instead ({lost:,} written before are lost)")
    assert not (tmp_path / "x.parquet").exists() and not list(tmp_path.glob(".x.parquet.*"))
    df, _ = read_log(fallback)
    assert df["kind"][0] == "gap" and df["seq"].to_list() == [lost - 1, *range(lost, total)]
