"""The held-out fit against vLLM on CPU: benchmarks/fit_heldout_bench.py --url against a vLLM started here.

vLLM is started as benchmarks/vllm_cpu.py starts it (vllm_servers: the tiny model, --max-num-seqs 6), plus
--enable-prompt-tokens-details, so that its answers say what its prefix cache held and the recordings keep it (the
fit and the replay then prefill only the rest); stopped on leaving. Arguments after ``--`` go to fit_heldout_bench.py.

Usage: python benchmarks/vllm_heldout.py [--vllm-python /work/wt/vllm-venv/bin/python] -- --json benchmarks/vllm_heldout_results.json
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import vllm_servers

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vllm-python", type=Path, default=Path("/work/wt/vllm-venv/bin/python"), help="the vLLM venv's Python")
    parser.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-tiny-llama", help="the tiny model (built if absent)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "sfqtui-vllm-cache")
    parser.add_argument("--max-num-seqs", type=int, default=6)
    parser.add_argument("bench", nargs="*", help="fit_heldout_bench.py's own arguments (after --)")
    args = parser.parse_args()
    vllm_servers.ensure_model(args.vllm_python, args.model_dir)
    port = vllm_servers.free_port()
    command = [*vllm_servers.vllm_command(args.vllm_python, args.model_dir, port, args.max_num_seqs), "--enable-prompt-tokens-details"]
    with tempfile.TemporaryDirectory(prefix="vllm-heldout-") as folder, \
            vllm_servers.running(command, vllm_servers.vllm_environment(args.cache_dir), Path(folder) / "vllm.log", "/health", port) as server:
        print(f"vLLM answered {server.started_s:.0f} s after its start", flush=True)
        subprocess.run([sys.executable, str(HERE / "fit_heldout_bench.py"), "--url", server.url, "--model", vllm_servers.NAME, *args.bench],
                       check=True)


if __name__ == "__main__":
    main()
