"""The pure parts of the vLLM-on-CPU benchmark (benchmarks/vllm_*.py): none of them needs vLLM or torch."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from sfqtui.trace.write import write_trace

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny-llama"} 4.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny-llama"} 28.0
# HELP vllm:num_requests_waiting_by_reason Number of requests waiting, by reason.
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{engine="0",model_name="tiny-llama",reason="capacity"} 28.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="tiny-llama",reason="deferred"} 0.0
"""


def step_s(running: int, prefilled: int) -> float:
    """A step of the engine model (docs/engine.md) with decode 5 ms, prefill 100 µs a token and slowdown 0.2."""
    return (0.005 + 100e-6 * prefilled) * (1 + 0.2 * (running - 1))


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> dict[str, ModuleType]:
    """The benchmark's modules, imported as their script imports them (by name, from benchmarks/)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return {name: importlib.import_module(name) for name in ("vllm_model", "vllm_servers", "vllm_load", "vllm_fit", "vllm_starts")}


def test_the_script_loads_neither_vllm_nor_torch() -> None:
    heavy = {"vllm", "torch", "transformers", "tokenizers"}
    code = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import vllm_cpu, vllm_model; print(sorted({heavy!r} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_the_model_has_heads_of_32_dimensions(bench: dict[str, ModuleType]) -> None:
    config = bench["vllm_model"].llama_config(vocab_size=512, bos_token_id=1, eos_token_id=2)
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]) == (2, 128, 4)
    assert config["head_dim"] == config["hidden_size"] // config["num_attention_heads"] == 32  # the CPU backend refuses 16


def test_vllm_is_started_on_loopback_offline_with_its_caches_where_told(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    servers = bench["vllm_servers"]
    command = servers.vllm_command(Path("/venv/bin/python"), tmp_path / "model", 8123, max_num_seqs=4)
    assert command[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert " --host 127.0.0.1 --port 8123 " in " ".join(command) and " --max-num-seqs 4 " in " ".join(command)
    assert "--max-num-queued-reqs" not in command
    assert servers.vllm_command(Path("p"), tmp_path, 1, 6, max_queued=8)[-2:] == ["--max-num-queued-reqs", "8"]
    env = servers.vllm_environment(tmp_path)
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert all(env[name].startswith(str(tmp_path)) for name in ("VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "HF_HOME"))


def test_the_gauges_are_read_by_name(bench: dict[str, ModuleType]) -> None:
    values = bench["vllm_load"].gauges(METRICS)
    assert (values["vllm:num_requests_running"], values["vllm:num_requests_waiting"]) == (4.0, 28.0)
    assert values["vllm:num_requests_waiting_by_reason"] == 28.0


def test_a_curve_point_and_the_slot_figures(bench: dict[str, ModuleType]) -> None:
    load = bench["vllm_load"]
    done = [load.Done("u", sent=float(k), first=k + 0.5, end=k + 2.0, prompt_tokens=57, output_tokens=4) for k in range(10)]
    samples = [load.Sample(t=k / 10, running=4.0, waiting=float(k % 3), proxy_queued=float(k % 2)) for k in range(100)]
    point = load.curve_point(2, done, samples, warmup_s=2.0, duration_s=12.0)
    assert point["requests"] == 8 and point["throughput_rps"] == 10 / 10  # ten answers ended after the warm-up, in 10 s
    assert (point["ttft_p50"], point["e2e_p90"], point["itl_mean"]) == (0.5, 2.0, 0.5)
    assert point["running_mean"] == 4.0 and point["prompt_tokens"] == 57

    starts = [("heavy", 0.1)] * 16 + [("light", 0.2)] * 4
    figures = load.slot_figures(starts, samples, max_num_seqs=6, light="light")
    assert figures["light_share"] == 0.2 and figures["requests_started"] == 20
    assert figures["engine_queue_p90"] == 2.0 and figures["busy"] == pytest.approx(4 / 6)
    assert figures["proxy_waiting_share"] == 0.5 and figures["busy_while_proxy_waits"] == pytest.approx(4 / 6)
    assert figures["proxy_limit_mean"] is None and figures["engine_scrape_p90_s"] == 0.0


def test_the_model_predicts_what_the_emulator_steps_make(bench: dict[str, ModuleType]) -> None:
    fit = bench["vllm_fit"]
    alone = fit.predict(0.005, 100e-6, 0.2, 4, clients=1, prompt=57, output=64)
    assert alone["ttft_p50"] == pytest.approx(step_s(1, 57)) and alone["e2e_p50"] == pytest.approx(step_s(1, 57) + 63 * step_s(1, 0))
    queued = fit.predict(0.005, 100e-6, 0.2, 4, clients=8, prompt=57, output=64)
    round_s = step_s(4, 4 * 57) + 63 * step_s(4, 0)
    assert queued["throughput_rps"] == pytest.approx(4 / round_s) and queued["e2e_p50"] == pytest.approx(2 * round_s)


def test_the_fit_finds_the_model_that_made_the_curve(bench: dict[str, ModuleType]) -> None:
    fit = bench["vllm_fit"]
    points = [{"clients": n, "prompt_tokens": 57, "output_tokens": 64, **fit.predict(0.005, 100e-6, 0.2, 6, n, 57, 64)} for n in (1, 2, 4, 8, 16)]
    fitted = fit.fit(points, max_num_seqs=6)
    assert (fitted["decode_ms_per_token"], fitted["prefill_us_per_token"]) == pytest.approx((5.0, 100.0), rel=0.1)
    assert fitted["batch_slowdown"] == pytest.approx(0.2, abs=0.02) and (fitted["max_num_seqs"], fitted["output_tokens"]) == (6, 64)
    with pytest.raises(ValueError, match="three client counts"):
        fit.fit(points[:2], max_num_seqs=6)


def test_the_errors_are_relative_to_the_real_engine(bench: dict[str, ModuleType]) -> None:
    fit = bench["vllm_fit"]
    real = [{"clients": 1, **dict.fromkeys(fit.MEASURES, 2.0), "waiting_mean": 0.0}]
    emulated = [{"clients": 1, **dict.fromkeys(fit.MEASURES, 2.2), "waiting_mean": 0.1}]
    [row] = fit.errors(real, emulated)
    assert row["e2e_p50"] == pytest.approx(0.1) and row["waiting_mean"] is None
    assert fit.summary([row])["e2e_p50_max"] == pytest.approx(0.1)
    table = fit.markdown(real, emulated)
    assert "| 1 | 2.000 / 2.200 |" in table and "| 1 | +10% |" in table


def test_fairness_at_engine_start_at_the_engine_s_own_starts_or_else_each_tagged_request_s_first_token(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    # A recording with 4 slots: nothing waits in the proxy, so no two users wait for a dispatch together; the engine runs
    # one request at a time, and light's request, sent last, starts after heavy's three (first tokens on the client's
    # clock, 5 s off the proxy's). A fifth request never had a first token: no start.
    users, arrivals = ["heavy", "heavy", "heavy", "light", "heavy"], [0.0, 0.01, 0.02, 0.03, 3.5]
    frame = pl.DataFrame({"request_id": [f"r{k}" for k in range(5)], "user": users, "arrival_s": arrivals, "cost": [1.0] * 5,
                          "service_s": [1.0, 2.0, 3.0, 4.0, 1.0], "class": [f"tag{k}" for k in range(5)]})
    recording = tmp_path / "run.parquet"
    write_trace(frame, recording, {"source": "sfqtui proxy", "slots": 4})
    first_tokens = {f"tag{k}": (5.0 + arrivals[k], 5.1 + k) for k in range(4)}
    figures = bench["vllm_starts"].start_fairness(recording, first_tokens, {}, {})
    assert (figures["start_measure"], figures["recorded_requests"], figures["starts"], figures["c_max"]) == ("first token", 5, 4, 1.0)
    assert figures["worst_gap_at_dispatch"] is None and figures["starts_moved_to_dispatch"] == figures["starts_moved_before_completion"] == 0
    gap = figures["worst_gap_at_engine_start"]
    assert (gap["ahead"], gap["behind"], gap["c_max"]) == ("heavy", "light", 3.0)  # heavy's three starts while light waited
    assert bench["vllm_starts"].proxy_waits(recording) == {f"tag{k}": 0.0 for k in range(5)}  # 4 slots: nothing waited for one

    # vLLM's per-request metrics: light's first token came 3.07 s after its start (its prefill step behind heavy's), so it
    # started first, as it arrived; the first tokens are given beside.
    figures = bench["vllm_starts"].start_fairness(recording, first_tokens, {"tag3": 3.07}, {})
    assert figures["start_measure"].startswith("vLLM's") and (figures["starts"], figures["starts_reported"]) == (4, 1)

    # A start the client's clock puts after the request's completion (heavy's first, at 1.1 s, done at 1.0 s) is moved before it.
    late = bench["vllm_starts"].start_fairness(recording, first_tokens | {"tag0": (5.0, 6.1)}, {}, {})
    assert (late["starts_moved_before_completion"], late["starts"]) == (1, 4)
    assert figures["worst_gap_at_engine_start"]["c_max"] == 1.0 and figures["at_first_token"]["worst_gap_at_engine_start"]["c_max"] == 3.0

    # Where the engine reports its starts (the recording's engine_start_s: light's first here), they are the measure.
    reported = tmp_path / "reported.parquet"
    write_trace(frame.with_columns(engine_start_s=pl.Series([0.05, 1.05, 2.05, 0.04, None])), reported, {"source": "sfqtui proxy", "slots": 4})
    figures = bench["vllm_starts"].start_fairness(reported, first_tokens, {}, {})
    assert figures["start_measure"].startswith("the engine's own") and figures["starts"] == 4
    assert figures["worst_gap_at_engine_start"]["c_max"] == 1.0 and figures["at_first_token"]["start_measure"] == "first token"


def test_an_answered_request_s_start_is_put_as_long_before_the_proxy_s_completion_as_before_the_client_s_end(bench: dict[str, ModuleType]) -> None:
    # Sent at 5.0 and answered at 7.0 on the client's clock, its first token at 6.0, 0.2 s after vLLM scheduled it; the
    # proxy saw it arrive at 0.5 and complete at 3.0 on its own.
    starts = bench["vllm_starts"].client_starts({"t": (5.0, 6.0)}, {"t": 0.2}, {"t": 7.0})
    assert starts("r", "t", 0.5, 3.0) == pytest.approx(3.0 - (7.0 - 5.8))  # the end is the anchor
    assert starts("r", "t", 0.5, None) == pytest.approx(0.5 + 0.8)  # not replayed to its completion: the arrival is
    assert bench["vllm_starts"].client_starts({"t": (5.0, 6.0)}, {}, {})("r", "t", 0.5, 3.0) == pytest.approx(1.5)  # not answered
    assert starts("r", "other", 0.5, 3.0) is None


def test_light_s_demand_bounds_its_share(bench: dict[str, ModuleType]) -> None:
    done = bench["vllm_load"].Done
    answered = [  # light's two requests: 0.2 s in the proxy, 0.1 s in vLLM's queue, 1 s in its engine (one said so), 0.2 s around it
        done("light", sent=0.0, first=0.6, end=1.5, prompt_tokens=57, output_tokens=4, tag="light-0", engine_queue=0.1, engine_ttft=0.3,
             engine_generation=0.7),
        done("light", sent=1.5, first=2.1, end=3.0, prompt_tokens=57, output_tokens=4, tag="light-1"),
        done("heavy", sent=0.0, first=3.0, end=9.0, prompt_tokens=57, output_tokens=4, tag="heavy-2"),
    ]
    waits = {"light-0": 0.2, "light-1": 0.3, "heavy-2": 2.0}
    bound = bench["vllm_starts"].demand_bound(answered, waits, {"light": 4, "heavy": 16}, "light", duration_s=5.0, started=40)
    assert (bound["light_answered"], bound["light_cycle_mean_s"], bound["engine_start_rate"]) == (2, 1.5, 8.0)
    assert bound["light_in_engine_mean_s"] == pytest.approx(0.95)  # vLLM's 1 s, and the other's first token to last
    assert bound["light_share_bound_engine_only"] == pytest.approx(4 / 0.95 / 8)  # 4 loops never waiting, against 8 starts a second
    assert bound["light_outside_mean_s"] == pytest.approx(1.5 - 0.25 - 0.05 - 0.95)
    assert bound["light_share_bound"] == pytest.approx(4 / (1.5 - 0.25 - 0.05) / 8)


def test_the_engine_page_shows_the_curve_drawn_from_the_committed_results(tmp_path: Path) -> None:
    page = (BENCHMARKS.parent / "docs" / "engine.md").read_text()
    assert "](img/vllm/curve.svg)" in page and (BENCHMARKS.parent / "docs" / "img" / "vllm" / "curve.svg").is_file()
    out = tmp_path / "curve.svg"
    done = subprocess.run([sys.executable, str(BENCHMARKS.parent / "docs" / "make_vllm_plots.py"), str(out)], capture_output=True, text=True, check=True)
    assert "requests per second" in out.read_text() and "e+0" not in out.read_text()
    assert "| 32 |" in done.stdout  # the tables for the page
