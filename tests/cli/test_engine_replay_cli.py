"""The engine model in the replaying commands: simulate writes start rows and says which
model it ran, compare reports waits, the dashboard replays it, bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.settings import EngineSettings
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.trace.schema import METADATA_KEY
from sfqtui.ui.app import SfqApp
from tests.dashboard import SIZE, settle

TRACE = Path(__file__).resolve().parents[2] / "traces" / "demo.parquet"
FIT = {"recording": "rec.parquet", "requests": 900, "median_error": 0.067}


def model_file(tmp_path: Path, **values: object) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"max_num_seqs": 4, "decode_ms_per_token": 20, **values}))
    return path


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


def test_simulate_on_the_engine_model_writes_start_rows_and_the_model(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    code, output = run("simulate", TRACE, "-o", log, "--engine-model", model_file(tmp_path, fit=FIT), "--engines", "2")
    assert code == 0, output
    assert "on 2 engines of 4 places" in output and "model.json (fit: recording rec.parquet, requests 900, median_error 0.067)" in output
    assert "8 slots" in output  # the slots default to the engines' places
    table = pq.read_table(log)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    assert meta["format"] == 4 and meta["service_source"] == "engine model" and meta["slots"] == 8
    assert meta["engine"]["engines"] == 2 and meta["engine"]["fit"] == FIT and meta["engine"]["model"]["max_num_seqs"] == 4
    rows = table.to_pylist()
    starts = [r for r in rows if r["kind"] == "start"]
    assert len(starts) == sum(r["kind"] == "dispatch" for r in rows) > 0
    assert {r["upstream"] for r in starts} == {"0", "1"} and all(r["v"] is None and r["meter"] is None for r in starts)
    assert all(r["upstream"] is None for r in rows if r["kind"] == "arrive")
    assert run("check", log)[0] == 0


def test_simulate_without_the_engine_model_writes_the_log_it_wrote_before(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    assert run("simulate", TRACE, "-o", log, "--slots", "4")[0] == 0
    table = pq.read_table(log)
    assert table.column_names == ["seq", "t", "kind", "scheduler", "request_id", "user", "cost", "v", "meter", "deficit", "output_tokens"]
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    assert meta["format"] == 2 and "engine" not in meta
    assert set(table["kind"].to_pylist()) == {"arrive", "dispatch", "complete", "idle_reset"}


def test_compare_reports_each_user_s_waits_on_the_engine_model(tmp_path: Path) -> None:
    code, output = run("compare", TRACE, "--schedulers", "sfq,fifo", "--engine-model", model_file(tmp_path, fit=FIT), "--json")
    assert code == 0, output
    payload = json.loads(output)
    assert payload["engine"]["fit"] == FIT and payload["slots"] == 4
    waits = payload["schedulers"]["sfq"]["users"]["alice"]["engine_waits"]
    assert set(waits) == {f"{part}_{q}" for part in ("to_dispatch", "in_engine", "to_start") for q in ("p50", "p90")}
    assert waits["in_engine_p90"] == 0  # a limit at the places: nothing waits in the engine's queue
    code, output = run("compare", TRACE, "--schedulers", "sfq", "--engine-model", model_file(tmp_path), "--slots", "24")
    assert code == 0, output
    assert "engines: 1 engine of 4 places" in output and "waits on the engine model" in output


def test_simulate_with_slots_that_follow_the_engines_writes_limit_rows(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    code, output = run("simulate", TRACE, "-o", log, "--engines", "2", "--slots", "auto:8")
    assert code == 0, output
    assert "(sfq, auto slots" in output and "slots auto (at most 8 an engine)" in output
    rows = pq.read_table(log).to_pylist()
    limits = [(r["upstream"], r["limit"], r["reason"]) for r in rows if r["kind"] == "limit"]
    assert limits[:2] == [("0", 2, "start"), ("1", 2, "start")] and len(limits) > 2
    assert all(1 <= limit <= 8 for _, limit, _ in limits)
    meta = json.loads(pq.read_schema(log).metadata[METADATA_KEY])
    assert meta["engine"]["auto"]["maximum"] == 8
    assert run("check", log)[0] == 0


@pytest.mark.parametrize("args,message", [
    (("--slots", "auto"), "--slots auto follows the engines' metrics: give --engine-model FILE or --engines N"),
    (("--engines", "1", "--slots", "auto:0"), "--slots 'auto:0': the maximum must be at least 1"),
    (("--engines", "1", "--slots", "auto", "--replicas", "2"), "with --replicas it needs --share global"),
    (("--engines", "0"), "--engines 0: must be a whole number of at least 1"),
    (("--engine-model", "missing.json"), "--engine-model missing.json"),
    (("--engine-model", "{bad}"), "not JSON"),
    (("--engine-model", '{"fit": 3}'), '"fit" must be a JSON object'),
    (("--engine-model", '{"kv_tokens": 100}'), "needs"),
])
def test_bad_engine_options_get_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    if args[1].startswith("{"):
        path = tmp_path / "model.json"
        path.write_text(args[1])
        args = (args[0], str(path))
    code, output = run("simulate", TRACE, "-o", tmp_path / "log.parquet", *args)
    assert code == 2 and message in output and len(output.strip().splitlines()) == 1, output


def test_auto_slots_without_the_engine_model_are_refused() -> None:
    code, output = run("calibrate", TRACE, "--slots", "auto")
    assert code == 2 and "--slots auto follows the engines' metrics: give --engine-model FILE or --engines N" in output


async def test_the_dashboard_replays_on_the_engine_model_beside_a_higher_limit() -> None:
    config = ReplayConfig("sfq", 6, engine=EngineSettings(EngineModel()))
    opening = Opening(TRACE, is_log=False, config=config, slots_given=True)
    app = SfqApp([opening, opening.rerun(slots=24)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "on 1 engine of 6 places" in app.runs[0].title
        await pilot.press("end", "left", "n", "p", "x")
        await pilot.pause()
        assert not app.runs[0].violations and not app.runs[1].violations
