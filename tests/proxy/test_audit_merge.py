"""A group's replica back after the store was away publishes the meters it raises as `merge`
events (docs/semantics.md §7): a recording across the suspension passes `check`, which names
where the bound was suspended; a merge row that lowers or misstates a meter is caught."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli_app
from sfqtui.trace.eventlog import read_log
from tests.proxy.test_proxy_group_faults import LEASE_S, Replica, chat, client, settle, until
from tests.proxy.test_proxy_stream import Follower
from tests.proxy_fixtures import state

SUSPENDED = re.compile(r"the group's bound was suspended from seq ([\d,]+) to seq ([\d,]+): replica (\d) served on its own")


async def test_a_recording_across_a_suspension_passes_check_and_names_it(fake, keys_path: Path, store: Any, tmp_path: Path,
                                                                          cli: CliRunner) -> None:
    _, upstream_url = fake
    saved = tmp_path / "group.parquet"
    a, b = Replica(upstream_url, keys_path, store.url, 2), Replica(upstream_url, keys_path, store.url, 2)
    try:
        follower = Follower(a.url, log=saved)
        await settle([client(r.url, u).chat.completions.create(**chat(f"before {u}")) for r in (a, b) for u in ("alice", "bob")])
        await asyncio.sleep(LEASE_S)  # a replica learns the group's size when it renews its lease
        store.pause()
        answers = await settle([client(r.url, u).chat.completions.create(**chat(f"paused {u}")) for r in (a, b) for u in ("alice", "carol")])
        store.resume()
        await until(lambda: all(state(r.url)["bound"] == "global" for r in (a, b)), timeout=15, what="both to rejoin")
        answers += await settle([client(r.url, "bob").chat.completions.create(**chat("after")) for r in (a, b)])
        follower.caught_up(a.url)
        follower.stop()
    finally:
        for replica in (a, b):
            replica.stop()
    assert not [x for x in answers if isinstance(x, Exception)], answers
    df, _ = read_log(saved)
    merges = df.filter(df["kind"] == "merge")
    assert set(merges["replica"].to_list()) == {0, 1} and set(merges["user"].to_list()) >= {"alice", "carol"}, merges
    assert (merges["cost"] > 0).all()

    result = cli.invoke(cli_app, ["check", str(saved)])
    assert result.exit_code == 0, result.output
    found = SUSPENDED.findall(result.output)
    assert {int(replica) for _, _, replica in found} == {0, 1}, result.output
    for since, merged, _ in found:
        assert int(since.replace(",", "")) < int(merged.replace(",", ""))
    assert "[  ok] §12 merge rows raise a meter" in result.output

    # A merge row that lowers its meter instead: caught, at that row.
    table = pq.read_table(saved)
    first = pc.index(table["kind"], "merge").as_py()
    meters = table["meter"].to_pylist()
    meters[first] = table["v"][first].as_py() - 1.0
    tampered = tmp_path / "tampered.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("meter"), "meter", pa.array(meters, pa.float64())), tampered)
    result = cli.invoke(cli_app, ["check", str(tampered)])
    assert result.exit_code == 1, result.output
    assert f"seq {table['seq'][first].as_py():,}: [§12 merge] a merge set" in result.output, result.output
