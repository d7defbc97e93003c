"""The servers benchmarks/vllm_cpu.py runs, each a process group of its own on 127.0.0.1, always stopped.

- vLLM's OpenAI server on CPU, from a venv of its own (never the project's), serving the
  tiny model of benchmarks/vllm_model.py, built on first use;
- `sfqtui engine` (the emulator) with a model file;
- `sfqtui proxy` in front of either.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
NAME = "tiny-llama"  # the model name both engines serve
STARTUP_S = 900.0  # vLLM has taken 30 to 65 s on a quiet 2-core machine, over 300 s on a busy one; the emulator under 2


@dataclass(frozen=True)
class Server:
    url: str  # http://127.0.0.1:PORT, without /v1
    started_s: float  # seconds from the process's start until it answered


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def vllm_command(python: Path, model_dir: Path, port: int, max_num_seqs: int, max_queued: int | None = None) -> list[str]:
    """vLLM's OpenAI server (`vllm serve` fails: the CPU build is packaged as vllm-cpu, so the module is run), with its
    per-request metrics on each answer's last chunk (its time from scheduling a request to its first token)."""
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir), "--served-model-name", NAME,
               "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "1024", "--max-num-seqs", str(max_num_seqs),
               "--uvicorn-log-level", "warning", "--enable-per-request-metrics"]
    if max_queued is not None:
        command += ["--max-num-queued-reqs", str(max_queued)]
    return command


def vllm_environment(cache: Path) -> dict[str, str]:
    """Offline, a 1 GiB KV cache, and every cache vLLM and torch write under ``cache``.

    A cache kept between runs (a folder under the temporary directory) spares a later start
    the compilation of the model's graphs, about 100 s of a first start on a busy machine.
    """
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_CACHE_ROOT": str(cache / "vllm"), "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
            "HF_HOME": str(cache / "hf"), "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def ensure_model(python: Path, model_dir: Path) -> None:
    """Build the tiny model into ``model_dir`` unless it is there already."""
    if (model_dir / "config.json").exists():
        return
    model_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(python), str(HERE / "vllm_model.py"), str(model_dir)], check=True)


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """SIGTERM to the process group we started (vLLM's engine core is a child process), SIGKILL after ``grace_s``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # children left behind by a leader that exited


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path, path: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < STARTUP_S:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({proc.returncode}) before it answered; the end of {log}:\n" + log.read_text()[-3000:])
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}{path}", timeout=2).status_code == 200:
                return time.monotonic() - started
        time.sleep(0.5)
    raise SystemExit(f"the server did not answer within {STARTUP_S:.0f} s; the end of {log}:\n" + log.read_text()[-3000:])


@contextlib.contextmanager
def running(command: list[str], env: dict[str, str] | None, log: Path, ready_path: str, port: int) -> Iterator[Server]:
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        yield Server(url, _wait_ready(proc, url, log, ready_path))
    finally:
        _stop(proc)


@contextlib.contextmanager
def vllm(python: Path, model_dir: Path, cache: Path, scratch: Path, max_num_seqs: int, max_queued: int | None = None) -> Iterator[Server]:
    """A vLLM server on CPU serving the tiny model (built first if needed), stopped on leaving; its log in ``scratch``."""
    ensure_model(python, model_dir)
    port = free_port()
    with running(vllm_command(python, model_dir, port, max_num_seqs, max_queued), vllm_environment(cache),
                 scratch / f"vllm-{port}.log", "/health", port) as server:
        yield server


@contextlib.contextmanager
def emulator(model_file: Path, scratch: Path) -> Iterator[Server]:
    """`sfqtui engine` serving the model in ``model_file`` under the name vLLM serves."""
    port = free_port()
    command = [sys.executable, "-m", "sfqtui", "engine", "--port", str(port), "--served-model-name", NAME, "--model-file", str(model_file)]
    with running(command, None, scratch / f"engine-{port}.log", "/v1/models", port) as server:
        yield server


@contextlib.contextmanager
def proxy(upstream: str, slots: str, keys: Path, scratch: Path, record: Path | None = None) -> Iterator[Server]:
    """`sfqtui proxy` in front of ``upstream`` with ``--slots slots`` (a number, or `auto` where the proxy has it), recording
    into ``record`` when given (the file is complete once the proxy is stopped)."""
    port = free_port()
    command = [sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream, "--listen", f"127.0.0.1:{port}", "--slots", slots,
               "--keys", str(keys)]
    if record is not None:
        command += ["--record", str(record)]
    with running(command, None, scratch / f"proxy-{port}.log", "/metrics", port) as server:
        yield server
