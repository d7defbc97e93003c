"""`sfqtui fit` on a real recording: the emulated engine (known parameters) behind the real
proxy, traffic from the official openai client, the proxy's --record file fitted.

The engine has fewer places (4) than the proxy has slots (6), so its own queue holds
requests and the fit must find the places as well as the step times."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.analysis.engine_fit.fit import fit_engine
from sfqtui.core.engines.model import EngineModel
from sfqtui.trace.fit_replay import replayed
from sfqtui.trace.served import served_requests
from tests.proxy_fixtures import KEY_OF, openai_http

pytestmark = pytest.mark.xdist_group("test_fit_recording")  # one worker records once for both tests

TRUTH = EngineModel(max_num_seqs=4, decode_ms_per_token=10.0, prefill_us_per_token=100.0, batch_slowdown=0.25)
REQUESTS = 100


@contextlib.contextmanager
def serving(*args: str) -> Iterator[str]:
    """``sfqtui ARGS`` in a process of its own, as a user runs it (its timing apart from the test's
    event loop); its URL, from the first line it writes. Stopped with SIGTERM, after which a proxy
    has written its recording."""
    process = subprocess.Popen([str(Path(sys.executable).with_name("sfqtui")), *args], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"(http://[\d.:]+)", line)
        assert found is not None, line
        threading.Thread(target=process.stderr.read, daemon=True).start()  # what else it writes never fills the pipe
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=15)


async def send(url: str, seed: int, requests: int = REQUESTS) -> None:
    """Requests at random (Poisson) instants, 6 a second for ten, then 40 a second for ten, and
    so on: the batch runs at every size from 1 to full, and the engine's queue fills and empties."""
    rng = random.Random(seed)
    clients = [openai.AsyncOpenAI(http_client=openai_http(), base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60) for key in KEY_OF.values()]

    async def one(k: int, words: int, output: int) -> None:
        await clients[k % len(clients)].chat.completions.create(
            model="sfqtui-emulated", max_tokens=output, messages=[{"role": "user", "content": " ".join(["abc"] * words)}])

    jobs = []
    for k in range(requests):
        await asyncio.sleep(rng.expovariate(40.0 if (k // 10) % 2 else 6.0))
        jobs.append(asyncio.create_task(one(k, rng.randint(20, 400), rng.randint(4, 24))))  # "abc " is 4 characters: a token
    await asyncio.gather(*jobs)
    await asyncio.gather(*(client.close() for client in clients))


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fit")
    keys = folder / "keys.toml"
    keys.write_text("".join(f'[keys."{key}"]\nuser = "{user}"\n\n' for user, key in KEY_OF.items()))
    record = folder / "record.parquet"
    with serving("engine", "--port", "0", "--max-num-seqs", str(TRUTH.max_num_seqs), "--decode-ms-per-token", str(TRUTH.decode_ms_per_token),
                 "--prefill-us-per-token", str(TRUTH.prefill_us_per_token), "--batch-slowdown", str(TRUTH.batch_slowdown),
                 "--no-enable-prefix-caching") as engine:  # its prompts are prefixes of each other: cached, they leave prefill unseen
        asyncio.run(send(engine, seed=0, requests=2))  # the engine's first answers, which load its code, go unrecorded
        with serving("proxy", "--upstream", engine, "--listen", "127.0.0.1:0", "--slots", "6", "--keys", str(keys),
                     "--record", str(record)) as proxy:
            asyncio.run(send(proxy, seed=4))
    return record


@pytest.mark.long
def test_the_fit_finds_the_emulators_parameters(recording: Path) -> None:
    found = served_requests(recording)
    assert len(found.served) == REQUESTS and found.left_out is None
    fitted = fit_engine(found.served)
    model = fitted.model
    assert fitted.most_in_flight == 6 and model.max_num_seqs == TRUTH.max_num_seqs  # found: the engine queued what it could not run
    # Measured times carry what the model does not have: the HTTP hops between processes that a
    # busy machine runs late. The engine itself keeps to its parameters under load (its requests'
    # run time, from its own metrics, came within 1% of its model's, with four or six busy loops
    # on the 2 cores), but the proxy sees each request sent and ended late by some milliseconds,
    # whatever the batch: a constant added to every request flattens the slowdown the times show
    # (0.25 fitted as 0.18, once 0.149) and lengthens decode. The fit reports that noise as its
    # error on the requests it fitted; the slowdown cannot be known better than that: a relative
    # error e in the times moves the slowdown by about e / 1.3 (batches of 1 to 4), so it is held
    # to the larger of 0.1 and the fit's p90 error (0.07 to 0.09 unloaded, fitted within 0.01;
    # 0.13 with six busy loops, within 0.07). Decode came within 17%, prefill within 47% (the
    # smallest share of each time): hence within 20% and half.
    fitted_p90 = fitted.service_fitted.p90
    assert fitted_p90 is not None
    assert model.decode_ms_per_token == pytest.approx(TRUTH.decode_ms_per_token, rel=0.2), model
    assert model.batch_slowdown == pytest.approx(TRUTH.batch_slowdown, abs=max(0.1, fitted_p90)), (model, fitted.service_fitted)
    assert model.prefill_us_per_token == pytest.approx(TRUTH.prefill_us_per_token, rel=0.5)
    held_out = fitted.service_held_out
    assert held_out.requests == REQUESTS // 5
    assert held_out.median is not None and held_out.median < 0.1 and held_out.p90 is not None and held_out.p90 < 0.3, (held_out, model)
    # Replayed from the arrivals alone, a small error in a step's time adds up over every request
    # ahead in the queues, and on a busy machine the emulator runs slower than its parameters say,
    # unevenly (the fit sees the average; the true parameters predict worse). Measured here while
    # other tests loaded the 2 cores 10 times over: waits off by 6% to 40% at the median (once 84%),
    # arrival to end by 6% to 27% (once 65%); sfqtui engine's default model, 36% to 97% and 11%
    # to 65%. Hence bounds of 75% and 50%, and the fitted model's waits closer than the default's.
    waits = replayed(found, fitted)
    assert waits.latency.requests == REQUESTS // 5 and waits.wait.requests > REQUESTS // 10
    assert waits.latency.median is not None and waits.latency.median < 0.5, (waits, model)
    assert waits.wait.median is not None and waits.wait.median < 0.75, (waits, model)
    default = replayed(found, dataclasses.replace(fitted, model=EngineModel())).wait.median
    assert default is not None and waits.wait.median < default, (waits, default)


def test_the_command_prints_the_fit_and_writes_a_model_the_engine_loads(recording: Path, cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    result = cli.invoke(app, ["fit", str(recording), "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    said = result.output
    assert f"{REQUESTS} requests, sent when a replay of the recording with its 6 slots dispatches them" in said
    assert "Fitted on the first 80 by arrival; held out the last 20" in said
    assert re.search(r"max_num_seqs[\s│]+4[\s│]+the best fit of 1\.\.6 \(most in flight\)", said)
    assert re.search(r"service time, held out[\s│]+20[\s│]+\d+\.\d%[\s│]+\d+\.\d%", said)
    assert re.search(r"wait, held out \(replayed\)[\s│]+\d+[\s│]+\d+\.\d%", said)
    assert re.search(r"arrival to end, held out \(replayed\)[\s│]+20[\s│]+\d+\.\d%", said)
    assert "e-0" not in said and "e+0" not in said
    saved = json.loads(out.read_text())
    assert saved["fit"]["source"] == str(recording) and saved["fit"]["held_out_requests"] == 20
    assert set(saved["fit"]["held_out_error"]) == {"service_s", "wait_s", "latency_s"}
    assert set(saved["fit"]["held_out_error"]["service_s"]) == {"requests", "median", "p90"}
    assert saved["fit"]["held_out"].startswith("off by (median/p90) service time ")
    model = EngineModel.load(out)
    assert model.max_num_seqs == 4 and model.decode_ms_per_token == saved["decode_ms_per_token"]
    given = cli.invoke(app, ["fit", str(recording), "--max-num-seqs", "5"], env={"COLUMNS": "200"})
    assert given.exit_code == 0 and re.search(r"max_num_seqs[\s│]+5[\s│]+given", given.output)
