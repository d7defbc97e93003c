"""Draw docs/img/vllm/curve.svg: the emulator against a real vLLM on CPU, from benchmarks/vllm_cpu_results.json.

`python benchmarks/vllm_cpu.py curve` measures vLLM's CPU build serving a tiny random Llama
with --max-num-seqs 4 under 1 to 32 closed-loop clients, fits the emulator to it and runs
the same sweep on `sfqtui engine` with the fitted model; this draws both, one panel per
measure, and prints the tables for docs/engine.md.

Usage: python docs/make_vllm_plots.py [OUTPUT] [--results benchmarks/vllm_cpu_results.json]
  (needs the docs extra: pip install -e '.[docs]'; matplotlib is imported here only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # the backend is chosen first
from matplotlib.ticker import FuncFormatter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import vllm_fit  # noqa: E402 - a benchmark module, found by the line above

OUT = ROOT / "docs" / "img" / "vllm" / "curve.svg"
PANELS = [("throughput_rps", None, "requests per second"), ("ttft_p50", "ttft_p90", "time to first token, s (p50, p90)"),
          ("e2e_p50", "e2e_p90", "end-to-end latency, s (p50, p90)"), ("running_mean", "waiting_mean", "requests running, waiting (mean)")]


def draw(curve: dict, out: Path) -> None:
    real, emulated = curve["vllm"], curve["emulator"]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(15, 3.6), layout="constrained")
    for ax, (first, second, title) in zip(axes, PANELS, strict=True):
        for points, name, style in ((real, "vLLM", "-"), (emulated, "emulator", "--")):
            clients = [p["clients"] for p in points]
            ax.plot(clients, [p[first] for p in points], style, marker="o", color="tab:blue", label=f"{name} {vllm_fit.MEASURES[first]}")
            if second:
                ax.plot(clients, [p[second] for p in points], style, marker="s", color="tab:orange", label=f"{name} {vllm_fit.MEASURES[second]}")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.set_xlabel("concurrent clients")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    model = curve["model"]
    fig.suptitle(f"vLLM on CPU (--max-num-seqs {curve['max_num_seqs']}, tiny random Llama, {real[0]['prompt_tokens']} prompt and "
                 f"{real[0]['output_tokens']} output tokens) against sfqtui engine fitted to it: decode {model['decode_ms_per_token']:.2f} ms, "
                 f"batch slowdown {model['batch_slowdown']:.3f}, prefill {model['prefill_us_per_token']:,.0f} µs/token", fontsize=10)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Date": None} if out.suffix == ".svg" else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, nargs="?", default=OUT)
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "vllm_cpu_results.json")
    args = parser.parse_args()
    results = json.loads(args.results.read_text())
    curve = results["curve"]
    draw(curve, args.output)
    print(vllm_fit.markdown(curve["vllm"], curve["emulator"]))
    print(f"\n{args.output}")


if __name__ == "__main__":
    main()
