"""Draw docs/img/slots/auto-vs-fixed.svg: issue 24's run behind fixed --slots 24 and behind --slots auto.

The emulated engine (`sfqtui engine`: 6 places, 20 ms a token, each request in the batch 10%
slower) behind the real proxy; 'heavy' keeps 16 equal requests going and 'light' 4 (24
tokens each), for 25 s. The engine's scheduler is sampled every 50 ms (tests/slots_fairness.py
runs the load; tests/proxy/test_auto_slots_fairness.py holds --slots auto to the issue's
numbers). Three panels: the engine's own queue, the proxy's slots, and light's share of the
requests the engine started. The figures are printed too, for docs/proxy.md.

Usage: python docs/make_slots_picture.py [OUTPUT]   (default: docs/img/slots/auto-vs-fixed.svg; needs the docs extra:
pip install -e '.[docs]'; about a minute). matplotlib is imported here only, never by the package.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # the backend is chosen first

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
from tests.proxy_fixtures import write_keys  # noqa: E402 - the tests' keys
from tests.slots_fairness import SlotsRun, run  # noqa: E402 - the acceptance test's run

OUT = ROOT / "docs" / "img" / "slots" / "auto-vs-fixed.svg"
COLOURS = {"24": "#c0504d", "auto": "#4f81bd"}
LIGHT_NAME = "light"  # the name for the user with 4 requests going


def draw(runs: list[SlotsRun], out: Path) -> None:
    fig, (queue, slots, share) = plt.subplots(1, 3, figsize=(13, 3.6), gridspec_kw={"width_ratios": [3, 3, 1.4]})
    for result in runs:
        label = f"--slots {result.slots}"
        t = [s.t for s in result.samples]
        queue.plot(t, [s.waiting for s in result.samples], color=COLOURS[result.slots], label=label, linewidth=1)
        slots.plot(t, [s.slots for s in result.samples], color=COLOURS[result.slots], label=label, linewidth=1.2)
    queue.set(title="requests waiting in the engine's own queue", xlabel="seconds")
    slots.axhline(6, color="grey", linestyle=":", linewidth=1)
    slots.text(0.5, 6.4, "the engine's 6 places", color="grey", fontsize=8)
    slots.set(title="the proxy's slots", xlabel="seconds", ylim=(0, 26))
    names = [f"--slots\n{r.slots}" for r in runs]
    shares = [100 * r.light_share for r in runs]
    share.bar(names, shares, color=[COLOURS[r.slots] for r in runs])
    share.axhline(50, color="grey", linestyle=":", linewidth=1)
    share.text(-0.4, 51.5, "SFQ's share", color="grey", fontsize=8)
    for k, value in enumerate(shares):
        share.text(k, value + 1.5, f"{value:.0f}%", ha="center", fontsize=9)
    share.set(ylim=(0, 60), yticks=[])
    share.set_title(f"{LIGHT_NAME}'s share of the\nrequests the engine started", fontsize=10)
    queue.legend(frameon=False)
    for axis in (queue, slots, share):
        axis.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Date": None} if out.suffix == ".svg" else None)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    with tempfile.TemporaryDirectory() as folder:
        keys = write_keys(Path(folder) / "keys.toml")
        runs = [run("24", keys), run("auto", keys)]
    for result in runs:
        print(result.summary())
    draw(runs, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
