"""Draw docs/img/architecture/parts.svg: the package's parts in their layers, the imports between them, and where events flow.

The boxes are the layers of the import contract (pyproject.toml), top to bottom; each box
says how many modules the part has. A grey arrow is "imports", labelled with the number of
modules that do, read from the code itself (grimp's graph, the one import-linter checks), so
the picture cannot drift from the house: an arrow that ran upwards would show. `errors`,
`paths` and `protocol` sit beside the layers: every part may use them. The blue arrows are
the flow of §7 events, from a trace, a log or a live proxy to the views.

Usage: python docs/make_architecture_picture.py [OUTPUT]
  (default: docs/img/architecture/parts.svg; needs the docs extra: pip install -e '.[docs]').
tests/house/test_docs.py runs it, so the script keeps working.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import grimp
import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # the backend is chosen first
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

ROOT = Path(__file__).resolve().parents[1]
LAYERS = (  # top to bottom, as the layers contract lists them
    ("cli",),
    ("ui",),
    ("runs",),
    ("attach", "proxy", "emulator", "sweep", "importers", "scenarios"),
    ("trace",),
    ("core",),
)
BESIDE = ("protocol", "errors", "paths")  # shared vocabulary every layer may use
WHAT = {
    "cli": "the commands", "ui": "the dashboard", "runs": "a run: table,\ntimeline, cursor",
    "attach": "stream client", "proxy": "SFQ proxy", "emulator": "emulated\nengine", "sweep": "sweeps\non Dask",
    "importers": "real logs\nto traces", "scenarios": "lessons,\nsynthetic", "trace": "Parquet: traces, logs, sources",
    "core": "schedulers, replay engine, estimator, log, analyses (pure Python)",
    "protocol": "the stream's\nvocabulary", "errors": "one error\ntree", "paths": "safe\noutput",
}
BOX_W, BOX_H, ROW_H = 1.5, 0.62, 1.25
WIDE, WIDE_PARTS = 3.6, ("cli", "ui", "runs", "trace", "core")


def part_of(module: str) -> str | None:
    names = module.split(".")
    known = {name for row in LAYERS for name in row} | set(BESIDE)
    return names[1] if len(names) > 1 and names[0] == "sfqtui" and names[1] in known else None


def import_counts() -> tuple[Counter[tuple[str, str]], Counter[str]]:
    """For each pair of parts, how many modules of the first import the second; and each part's modules."""
    graph = grimp.build_graph("sfqtui")
    edges: Counter[tuple[str, str]] = Counter()
    sizes: Counter[str] = Counter()
    for module in graph.modules:
        source = part_of(module)
        if source is None:
            continue
        sizes[source] += 1
        for target in {part_of(m) for m in graph.find_modules_directly_imported_by(module)}:
            if target is not None and target != source:
                edges[(source, target)] += 1
    return edges, sizes


def positions() -> dict[str, tuple[float, float]]:
    width = max(len(row) for row in LAYERS) * (BOX_W + 0.25)
    where: dict[str, tuple[float, float]] = {}
    for depth, row in enumerate(LAYERS):
        y = (len(LAYERS) - 1 - depth) * ROW_H
        step = width / len(row)
        for i, name in enumerate(row):
            where[name] = (step * (i + 0.5), y)
    for i, name in enumerate(BESIDE):
        where[name] = (width + 1.3, (len(LAYERS) - 2 - 1.4 * i) * ROW_H)
    return where


def box(ax: plt.Axes, name: str, centre: tuple[float, float], modules: int) -> None:
    w = half_width(name) * 2
    x, y = centre
    beside = name in BESIDE
    ax.add_patch(FancyBboxPatch((x - w / 2, y - BOX_H / 2), w, BOX_H, boxstyle="round,pad=0.04",
                                fc="#f4f4f4" if beside else "#fdf6e3", ec="#888888" if beside else "#7a6a3a", lw=1.2, zorder=2))
    ax.text(x, y + 0.13, f"{name}  ({modules:,})", ha="center", va="center", fontsize=9.5, weight="bold", zorder=3)
    ax.text(x, y - 0.14, WHAT[name], ha="center", va="center", fontsize=7, color="#444444", zorder=3, linespacing=0.95)


def half_width(name: str) -> float:
    return BOX_W * (WIDE if name in WIDE_PARTS else 1) / 2


def spread(where: dict[str, tuple[float, float]], edges: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float]]:
    """Where each arrow leaves its source and meets its target: a box's arrows are spaced evenly along its edge,
    in the order of the boxes at their other ends, so that no two share a line."""
    ends: dict[tuple[str, str], list[float]] = {edge: [0.0, 0.0] for edge in edges}
    for box_name in where:
        for side, pick in ((0, lambda e: e[0]), (1, lambda e: e[1])):
            mine = sorted((e for e in edges if pick(e) == box_name), key=lambda e: (where[e[1 - side]][0], -where[e[1 - side]][1]))
            x, half = where[box_name][0], half_width(box_name) * 0.85
            for i, edge in enumerate(mine):
                ends[edge][side] = x if len(mine) == 1 else x - half + 2 * half * i / (len(mine) - 1)
    return {edge: (a, b) for edge, (a, b) in ends.items()}


def flows(where: dict[str, tuple[float, float]]) -> list[tuple[tuple[float, float], tuple[float, float], str, float, float]]:
    """The way §7 events travel, as (start, end, label, bend, where along it the label sits): a replay, a saved log or a
    live proxy to the views."""
    top = {name: y + BOX_H / 2 for name, (_, y) in where.items()}
    bottom = {name: y - BOX_H / 2 for name, (_, y) in where.items()}
    between = (where["proxy"][0] + where["emulator"][0]) / 2  # the gap between two boxes of the middle layer
    lx, px, ex = where["attach"][0], where["proxy"][0], where["emulator"][0]
    return [
        ((between - 0.9, bottom["trace"]), (between - 0.9, top["core"]), "trace rows", 0.0, 0.5),
        ((between + 0.9, top["core"]), (between + 0.9, bottom["trace"]), "EventRows", 0.0, 0.5),
        ((between, top["trace"]), (between, bottom["runs"]), "EventBatch", 0.0, 0.17),
        ((px - 0.3, bottom["proxy"]), (lx + 0.3, bottom["attach"]), "SSE §8", -0.7, 0.5),
        ((lx, top["attach"]), (between - 0.7, bottom["runs"]), "EventBatch", -0.2, 0.5),
        ((between, top["runs"]), (between, bottom["ui"]), "Frame", 0.0, 0.5),
        ((px + 0.2, top["proxy"]), (ex - 0.2, top["emulator"]), "HTTP", -0.5, 0.5),
    ]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img" / "architecture" / "parts.svg"
    edges, sizes = import_counts()
    where = positions()
    fig, ax = plt.subplots(figsize=(12.5, 8.2))
    for name, centre in where.items():
        box(ax, name, centre, sizes[name])
    drawn = sorted(edge for edge in edges if edge[0] not in BESIDE and edge[1] not in BESIDE)
    for (source, target), (x0, x1) in spread(where, drawn).items():
        y0, y1 = where[source][1] - BOX_H / 2, where[target][1] + BOX_H / 2
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=8, color="#c4c4c4", lw=0.7, zorder=1,
                                     shrinkA=0, shrinkB=0))
        ax.text(x1 + (x0 - x1) * 0.12, y1 + 0.12, f"{edges[(source, target)]:,}", fontsize=6, color="#8a8a8a",
                ha="center", va="center", zorder=1, bbox={"fc": "white", "ec": "none", "pad": 0.2})
    for (x0, y0), (x1, y1), label, bend, at in flows(where):
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), connectionstyle=f"arc3,rad={bend}", arrowstyle="-|>", mutation_scale=14,
                                     color="#2e86c1", lw=2.2, alpha=0.9, zorder=4, shrinkA=0, shrinkB=0))
        ax.text(x0 + (x1 - x0) * at + bend * (y1 - y0) * 0.5, y0 + (y1 - y0) * at - bend * (x1 - x0) * 0.5, label,
                fontsize=8, color="#1b4f72", ha="center", va="center", zorder=5, style="italic",
                bbox={"fc": "white", "ec": "#2e86c1", "lw": 0.6, "pad": 1.5, "alpha": 0.95})
    ax.text(where["cli"][0], where["cli"][1] + 0.75,
            "grey: imports (modules that import), only downwards and never between siblings · blue: where §7 events flow",
            ha="center", fontsize=8.5, color="#333333")
    ax.set_xlim(-0.3, max(x for x, _ in where.values()) + 1.2)
    ax.set_ylim(-0.6, (len(LAYERS) - 1) * ROW_H + 1.0)
    ax.set_aspect("equal")
    ax.axis("off")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight", metadata={"Date": None} if out.suffix == ".svg" else None)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
