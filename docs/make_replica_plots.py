"""Draw docs/img/replicas/measures.svg: what several balancer replicas cost on a real trace.

The trace is the Azure LLM inference trace 2023, conversation service (19,366 requests in
3,502 s), imported with `sfqtui import azure` and given 16 users drawn by Zipf (the trace
has no tenant id). It replays on 32 slots: the token service model's slot time adds up to
31.1 busy slots on average over the arrivals, so one scheduler just keeps up while bursts
queue. `sfqtui sweep` (on a local Dask cluster) replays it as 1, 2, 4 and 8 replicas behind
each router under each share mode, each measured against one SFQ on the same 32 slots
(semantics §11); the picture has one panel per measure and router, a group of bars per K.
The figures are printed as a Markdown table too, for docs/replicas.md.

Usage: python docs/make_replica_plots.py [OUTPUT] [--quick] [--from GRID.parquet]
  (default: docs/img/replicas/measures.svg, or .png by its name; needs the docs extra:
  pip install -e '.[docs]'). --from draws a sweep's output file again without replaying;
--quick replays the first 2,000 requests as 1 and 2 replicas, on a cluster of one worker (a second
costs more to start than its share of these runs saves; tests/house/test_docs.py runs it so the
script keeps working). matplotlib is imported here only, never by the package.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # the backend is chosen first
import polars as pl
from matplotlib.ticker import MaxNLocator, ScalarFormatter

ROOT = Path(__file__).resolve().parents[1]
CONV = ROOT / "traces" / "real" / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
USERS, SLOTS, SYNC = 16, 32, "sync:5"
ROUTERS = ("hash", "random", "round-robin", "least-loaded")
SHARES = ("none", SYNC, "global")
COLOURS = {"none": "#c0392b", SYNC: "#e69f00", "global": "#2e86c1"}
MEASURES = (  # column, title, unit, scale
    ("worst_gap_cmax", "worst gap |W_i - W_j|", "c_max", 1.0),
    ("drift_cmax", "drift from one SFQ", "c_max", 1.0),
    ("stranded", "stranded capacity", "% of slot-seconds", 100.0),
)


def sfqtui(*args: str) -> None:
    """Run an sfqtui command; its own report is not needed here (the figures are read from its output file)."""
    subprocess.run([sys.executable, "-m", "sfqtui", *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def measured(work: Path, quick: bool) -> pl.DataFrame:
    """Import the trace and sweep the grid; one row per run."""
    trace = work / "azure2023-conv.parquet"
    sfqtui("import", "azure", str(CONV), "-o", str(trace), "--users", str(USERS), "--assign", "zipf", "--seed", "0")
    if quick:
        pl.read_parquet(trace).head(2_000).write_parquet(trace)
    grid = work / "grid.parquet"
    sfqtui("sweep", str(trace), "--schedulers", "sfq", "--slots", str(SLOTS), "--replicas", "1,2" if quick else "1,2,4,8",
           "--router", ",".join(ROUTERS[:2] if quick else ROUTERS), "--share", ",".join(SHARES), "--workers", "1" if quick else "2",
           "-o", str(grid))
    runs = pl.read_parquet(grid)
    failed = runs.filter(pl.col("error").is_not_null())
    if failed.height:
        raise SystemExit(f"{failed.height} run(s) failed: {failed['error'][0]}")
    return runs


def plain_ticks() -> ScalarFormatter:
    """Axis ticks as people read them: positional, never scientific, no offset."""
    ticks = ScalarFormatter(useOffset=False)
    ticks.set_scientific(False)
    return ticks


def label(x: float) -> str:
    """A bar's figure: whole from 10 up, then one decimal, two below 1."""
    if x == 0:
        return "0"
    return f"{x:,.0f}" if x >= 10 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def draw(runs: pl.DataFrame, out: Path) -> None:
    one = runs.filter(pl.col("replicas") == 1).row(0, named=True)
    counts = sorted(k for k in runs["replicas"].unique() if k > 1)
    routers = [r for r in ROUTERS if r in runs["router"].to_list()]
    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False})
    fig, axes = plt.subplots(len(MEASURES), len(routers), figsize=(3.1 * len(routers), 2.6 * len(MEASURES)), squeeze=False)
    width = 0.8 / len(SHARES)
    for row, (column, title, unit, scale) in enumerate(MEASURES):
        for col, router in enumerate(routers):
            ax = axes[row][col]
            for s, share in enumerate(SHARES):
                values = [scale * _value(runs, k, router, share, column) for k in counts]
                places = [i + (s - (len(SHARES) - 1) / 2) * width for i in range(len(counts))]
                bars = ax.bar(places, values, width, color=COLOURS[share], label=f"share {share}")
                ax.bar_label(bars, [label(v) for v in values], fontsize=6.5, padding=1)
            reference = scale * (one[column] or 0.0)
            ax.axhline(reference, color="black", linewidth=0.8, linestyle=":", label="one SFQ")
            if column == "worst_gap_cmax":
                ax.axhline(2.0, color="grey", linewidth=0.8, linestyle="--", label="2 c_max (§3.2 bound)")
            ax.set_xticks(range(len(counts)), [f"K = {k}" for k in counts])
            ax.yaxis.set_major_formatter(plain_ticks())
            ax.yaxis.set_major_locator(MaxNLocator(5))
            ax.margins(y=0.18)
            if row == 0:
                ax.set_title(f"router {router}", fontweight="bold")
            if col == 0:
                ax.set_ylabel(f"{title}\n({unit})")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle(f"Azure 2023 conversation trace, {USERS} users, {SLOTS} slots: K replicas against one SFQ on the same slots\n"
                 "(each panel on its own scale: read the figures on the bars)", fontweight="bold")
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Date": None})  # no date: the file changes only when the figures do
    plt.close(fig)


def _value(runs: pl.DataFrame, k: int, router: str, share: str, column: str) -> float:
    found = runs.filter((pl.col("replicas") == k) & (pl.col("router") == router) & (pl.col("share") == share))
    return float(found[column][0] or 0.0)


def table(runs: pl.DataFrame) -> str:
    """The figures as a Markdown table, one row per run."""
    lines = ["| K | router | share | worst gap (c_max) | drift (c_max) | stranded | makespan ratio |", "|---|---|---|---:|---:|---:|---:|"]
    for run in runs.sort(["replicas", "router", "share"], nulls_last=False).iter_rows(named=True):
        router = run["router"] or "-"
        share = run["share"] or "-"
        lines.append(f"| {run['replicas']} | {router} | {share} | {run['worst_gap_cmax']:,.2f} | {run['drift_cmax']:,.2f} | "
                     f"{100 * run['stranded']:.1f}% | {run['makespan_ratio']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    args = sys.argv[1:]
    grid = args[args.index("--from") + 1] if "--from" in args else None
    args = [a for i, a in enumerate(args) if a not in ("--quick", "--from") and (i == 0 or args[i - 1] != "--from")]
    out = Path(args[0]) if args else ROOT / "docs" / "img" / "replicas" / "measures.svg"
    if grid is not None:
        runs = pl.read_parquet(grid)
    else:
        with tempfile.TemporaryDirectory(prefix="sfqtui-replica-plots-") as work:
            runs = measured(Path(work), quick="--quick" in sys.argv)
    draw(runs, out)
    print(table(runs))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
