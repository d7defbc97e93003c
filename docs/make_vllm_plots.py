"""Draw docs/img/vllm/curve.svg: the emulator against a real vLLM on CPU, from benchmarks/vllm_cpu_results.json.

`python benchmarks/vllm_cpu.py curve` measures vLLM's CPU build serving a tiny random Llama
with --max-num-seqs 4 under 1 to 32 closed-loop clients, fits the emulator to it and runs
the same sweep on `sfqtui engine` with the fitted model; this draws both, one panel per
measure, and prints the tables for docs/engine.md: the curve's, the slot runs' and, where
benchmarks/vllm_heldout_results.json is there (`benchmarks/fit_heldout_bench.py --url`), the
held-out prediction's.

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


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _c_max(run: dict, key: str) -> str:
    """A worst gap in c_max; "none" where no two users waited at once, "–" where the run did not measure it."""
    if key not in run:
        return "–"
    gap = run[key]
    return "none" if gap is None else f"{gap['c_max']:,.0f} c_max ({gap['ahead']} over {gap['behind']})"


def slot_table(slots: dict[str, dict]) -> str:
    """The slot runs, one row each: the #24 targets, light's demand bound, the worst gaps, the load average."""
    rows = ["| run | requests started | light's share | light's bound | engine queue p90 | places busy | worst gap at dispatch | "
            "worst gap at engine start | load average |", "|---|---:|---:|---:|---:|---:|---|---|---|"]
    for name, run in slots.items():
        load = run.get("load_average")
        rows.append(f"| {name} | {run['requests_started']:,} | {_pct(run['light_share'])} | {_pct(run.get('light_share_bound'))} | "
                    f"{run['engine_queue_p90']:,.1f} | {_pct(run['busy'])} | {_c_max(run, 'worst_gap_at_dispatch')} | "
                    f"{_c_max(run, 'worst_gap_at_engine_start')} | {'–' if load is None else ', '.join(f'{x:.1f}' for x in load)} |")
    return "\n".join(rows)


def heldout_table(heldout: dict) -> str:
    rows = ["| run | requests | e2e median | e2e p90 | load average |", "|---|---:|---:|---:|---|"]
    for run in heldout["runs"]:
        load = ", ".join(f"{x:.1f}" for x in run.get("load_average", []))
        clients = f"{run['clients']:,} client{'' if run['clients'] == 1 else 's'}"
        rows.append(f"| {run['kind']}, {clients} | {run['requests']:,} | {100 * run['median']:.1f}% | {100 * run['p90']:.1f}% | {load} |")
    pooled = heldout["held_out"]
    rows.append(f"| held out, all | {pooled['requests']:,} | {100 * pooled['median']:.1f}% | {100 * pooled['p90']:.1f}% | |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, nargs="?", default=OUT)
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "vllm_cpu_results.json")
    parser.add_argument("--heldout", type=Path, default=ROOT / "benchmarks" / "vllm_heldout_results.json")
    args = parser.parse_args()
    results = json.loads(args.results.read_text())
    curve = results["curve"]
    draw(curve, args.output)
    print(vllm_fit.markdown(curve["vllm"], curve["emulator"]))
    print("\n" + slot_table(results.get("slots", {})))
    if args.heldout.exists():
        print("\n" + heldout_table(json.loads(args.heldout.read_text())))
    print(f"\n{args.output}")


if __name__ == "__main__":
    main()
