"""The emulated engine's model (its parameters and step time) and the `sfqtui engine` command's options."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.engines.model import EngineModel
from sfqtui.errors import InputError


def test_a_step_grows_with_the_batch_and_the_prefill() -> None:
    model = EngineModel(decode_ms_per_token=10.0, prefill_us_per_token=100.0, batch_slowdown=0.5)
    assert model.step_s(1, 0) == pytest.approx(0.010)
    assert model.step_s(3, 0) == pytest.approx(0.020)
    assert model.step_s(1, 1000) == pytest.approx(0.110)


def test_the_model_round_trips_and_refuses_unknown_or_bad_values() -> None:
    model = EngineModel(max_num_seqs=3, max_queued=7, batch_slowdown=0.25)
    assert EngineModel.from_dict(json.loads(json.dumps(model.as_dict()))) == model
    with pytest.raises(InputError, match="unknown engine parameter"):
        EngineModel.from_dict({"max_seqs": 3})
    with pytest.raises(InputError, match="--kv-tokens"):
        EngineModel(kv_tokens=0)
    with pytest.raises(InputError, match="--batch-slowdown"):
        EngineModel(batch_slowdown=-1.0)


def test_a_fitted_models_account_of_its_fit_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"max_num_seqs": 3, "batch_slowdown": 0.2, "fit": {"source": "rec.parquet", "requests": 500}}))
    assert EngineModel.load(path) == EngineModel(max_num_seqs=3, batch_slowdown=0.2)
    with pytest.raises(InputError, match="unknown engine parameter"):
        EngineModel.from_dict({"max_num_seqs": 3, "fit": {}})  # a parameter set in code has no fit to tell


@pytest.mark.parametrize(("args", "says"), [
    (["--max-num-seqs", "0"], "--max-num-seqs 0: must be a whole number of at least 1"),
    (["--kv-tokens", "-5"], "--kv-tokens -5"),
    (["--decode-ms-per-token", "-2"], "--decode-ms-per-token -2.0: must be a number of at least 0"),
    (["--max-queued", "-1"], "--max-queued -1"),
    (["--port", "70000"], "--port 70000"),
    (["--model-file", "missing.json"], "--model-file missing.json"),
])
def test_bad_options_end_in_one_line(cli: CliRunner, args: list[str], says: str) -> None:
    result = cli.invoke(app, ["engine", *args])
    assert result.exit_code == 2
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_a_bad_model_file_ends_in_one_line(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text('{"max_num_seqs": 2, "speed": 3}')
    result = cli.invoke(app, ["engine", "--model-file", str(tmp_path / "model.json")])
    assert result.exit_code == 2 and "unknown engine parameter(s) speed" in result.stderr


def test_help_explains_every_option(cli: CliRunner) -> None:
    result = cli.invoke(app, ["engine", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--port", "--host", "--served-model-name", "--model-file", "--max-num-seqs", "--kv-tokens", "--prefill-us-per-token",
                   "--decode-ms-per-token", "--batch-slowdown", "--max-queued", "--output-tokens", "--context-us-per-token",
                   "--slowed-prefill"):
        assert option in result.stdout


def test_the_command_serves_a_model_file_with_options_over_it(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text(json.dumps({"max_num_seqs": 3, "kv_tokens": 999}))
    sfqtui = Path(sys.executable).with_name("sfqtui")
    process = subprocess.Popen([str(sfqtui), "engine", "--port", "0", "--model-file", str(tmp_path / "model.json"), "--kv-tokens", "500"],
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "3 places, 500 KV tokens, an unbounded queue" in line
        url = re.search(r"http://\S+/v1", line)
        assert url is not None
        models = httpx.get(f"{url.group(0)}/models", timeout=5).json()
        assert models["data"][0]["id"] == "sfqtui-emulated" and models["data"][0]["max_model_len"] == 500
    finally:
        process.terminate()
        process.wait(timeout=15)
