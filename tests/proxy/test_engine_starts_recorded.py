"""Fairness where it is felt, recorded for real: the emulated engine (6 places, its own FCFS
queue) reports when each request starts running, the proxy publishes it as a start event, a
follower records the stream, and `sfqtui check` on the recording finds what the engine's
queue did to SFQ's decisions when the proxy sends it more than it runs (--slots 24): 'heavy'
keeping 16 requests going and 'light' 4, the worst gap at engine start is many times the one
at dispatch; `sfqtui compare` of the proxy's own recording on the same engine model predicts
it (far more with 24 slots than with 6)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pyarrow as pa
from typer.testing import CliRunner

from sfqtui.attach.stream import EventStream
from sfqtui.attach.stream_log import StreamLogWriter
from sfqtui.cli.app import app
from sfqtui.cli.engine_start import NOT_REPORTED
from sfqtui.core.analysis.fairness import fairness
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.numbers import amount
from sfqtui.emulator.server import EngineServer
from sfqtui.trace.eventlog import iter_log_rows, read_log
from tests.fake_upstream import ServerThread
from tests.proxy_fixtures import KEY_OF, ask, openai_sync_http, running_proxy, state, wait_for

HEAVY, LIGHT = "bob", "carol"
RUN_S = 5.0
NAME = "emulated-test"


def keep_going(url: str, user: str, clients: int, until: float, stream: bool) -> list[threading.Thread]:
    """``clients`` threads, each sending ``user``'s requests one after another until ``until``."""
    llm = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{url}/v1", api_key=KEY_OF[user], max_retries=0, timeout=30)

    def loop() -> None:
        while time.monotonic() < until:
            ask: dict[str, Any] = {"model": NAME, "messages": [{"role": "user", "content": "sixteen chars!!!"}], "max_tokens": 12}
            if stream:
                for _chunk in llm.chat.completions.create(stream=True, **ask):
                    pass
            else:
                llm.chat.completions.create(**ask)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    return threads


class Recording:
    """The proxy's stream followed into an event log, as `sfqtui attach --record` keeps it."""

    def __init__(self, url: str, path: Path) -> None:
        self.url = url
        self.stream = EventStream(url, backoff_s=(0.05, 0.2))
        self.last_seq = -1
        self._thread = threading.Thread(target=self._run, args=(path,), daemon=True)
        self._thread.start()

    def _run(self, path: Path) -> None:
        with StreamLogWriter(path, self.stream.base_url) as writer:
            for item in self.stream:
                writer.write(item)
                if isinstance(item, pa.Table) and item.num_rows:
                    self.last_seq = item["seq"].to_pylist()[-1]

    def stop(self) -> None:
        """Once caught up with the proxy: the file is written."""
        wait_for(lambda: self.last_seq >= state(self.url)["seq"], what="the recording to catch up")
        self.stream.close()
        self._thread.join(30)
        assert not self._thread.is_alive()


def test_a_recording_through_an_engine_that_reports_starts_shows_its_queue_undoing_sfq(keys_path: Path, tmp_path: Path) -> None:
    saved, trace, model = tmp_path / "live.parquet", tmp_path / "trace.parquet", tmp_path / "model.json"
    engine_model = EngineModel(max_num_seqs=6, decode_ms_per_token=25.0, batch_slowdown=0.1)
    model.write_text(json.dumps(engine_model.as_dict()))
    with ServerThread(EngineServer(engine_model, NAME)) as engine, running_proxy(engine.url, keys_path, slots=24, record=trace) as proxy:
        recording = Recording(proxy.url, saved)
        until = time.monotonic() + RUN_S
        # Half the heavy user's requests streamed: a streamed answer's headers come when the engine starts it.
        senders = (keep_going(proxy.url, HEAVY, 8, until, stream=True) + keep_going(proxy.url, HEAVY, 8, until, stream=False)
                   + keep_going(proxy.url, LIGHT, 4, until, stream=False))
        for sender in senders:
            sender.join(30)
        recording.stop()

    df, _ = read_log(saved)
    starts = df.filter(df["kind"] == "start")
    assert starts.height >= 12 and set(starts["upstream"].to_list()) == {engine.url.removeprefix("http://")}
    assert starts.height == df.filter(df["kind"] == "complete").height  # every request answered was started, once

    report = fairness(iter_log_rows(saved), at_engine_start=True)
    started = report.at_engine_start
    assert started is not None and started.worst_gap is not None
    dispatch_gap = report.worst_gap.gap if report.worst_gap is not None else 0.0
    cost = max(df["cost"].drop_nulls())
    # With slots to spare SFQ queues nothing: no gap at dispatch beyond a request or two. The
    # engine's queue then serves by arrival, and heavy's sixteen take most of its places.
    assert dispatch_gap <= 2 * cost
    assert started.worst_gap.gap > 5 * cost, (started.worst_gap, cost, starts.height)
    assert (started.worst_gap.ahead, started.worst_gap.behind) == (HEAVY, LIGHT)
    assert started.share(LIGHT) < 0.35

    result = CliRunner().invoke(app, ["check", str(saved)])
    assert result.exit_code == 0, result.output
    gap_at_start = f"at engine start {amount(started.worst_gap.gap)} (bob over carol"
    assert "worst |W_i - W_j| at dispatch " in result.output and gap_at_start in result.output, result.output
    assert re.search(r"starts out of dispatch order: [\d,]+ pairs? of two users' requests", result.output), result.output

    # The proxy's own recording, replayed on the same engine model, predicts it too: far more at
    # engine start with 24 slots than with 6, its places (the recorded arrivals, not closed loops).
    predicted = {}
    for slots in (24, 6):
        result = CliRunner().invoke(app, ["compare", str(trace), "--schedulers", "sfq", "--slots", str(slots), "--engine-model", str(model),
                                          "--json"])
        assert result.exit_code == 0, result.output
        predicted[slots] = json.loads(result.output)["schedulers"]["sfq"]["at_engine_start"]["worst_gap"]["gap"]
    assert predicted[24] > 2 * predicted[6], predicted


def test_a_recording_through_an_engine_that_does_not_report_starts_says_so(fake: Any, keys_path: Path, tmp_path: Path) -> None:
    """Like vLLM, the fake upstream says nothing of when a request started: no start rows, and check does not invent them."""
    _, upstream_url = fake
    saved = tmp_path / "live.parquet"
    with running_proxy(upstream_url, keys_path) as proxy:
        recording = Recording(proxy.url, saved)
        ask(proxy.url, 3)
        ask(proxy.url, 2, user="carol")
        recording.stop()
    df, _ = read_log(saved)
    assert df.height and "start" not in df["kind"].to_list()
    result = CliRunner().invoke(app, ["check", str(saved)])
    assert result.exit_code == 0 and f"  {NOT_REPORTED}\nno violations" in result.output, result.output
