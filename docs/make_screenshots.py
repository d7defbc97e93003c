"""Export the SVG screenshots used in docs/guide.md, docs/tutorial.md, docs/proxy.md and docs/replicas.md, from the app itself.

The proxy's picture is of `sfqtui attach` on a real proxy (`sfqtui proxy`, in front of
the tests' fake upstream, both on loopback) while three users send it requests.

Usage: python docs/make_screenshots.py [OUTPUT_DIR]   (default: docs/img)

tests/house/test_docs.py runs this into a temporary folder, so the script keeps working;
rerun it after changing the screen and commit the new images.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from sfqtui.core.engine.replay import ReplayConfig
from sfqtui.core.engine.run_spec import parse_run_specs
from sfqtui.runs.live import LiveOpening
from sfqtui.runs.opening import Opening
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import SfqApp

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"
LESSON_TRACES = Path(tempfile.mkdtemp(prefix="sfqtui-shots-"))


def single(trace: str, scheduler: str) -> Callable[[], SfqApp]:
    return lambda: SfqApp(Opening(TRACES / trace, is_log=False, config=ReplayConfig(scheduler)))


def lesson(name: str) -> Callable[[], SfqApp]:
    """The app `sfqtui teach NAME` opens."""

    def make() -> SfqApp:
        chosen = LESSONS[name]
        trace = LESSON_TRACES / f"{name}.parquet"
        chosen.write(trace)
        openings = [Opening(trace, is_log=False, config=chosen.config(s), slots_given=True) for s in chosen.schedulers]
        return SfqApp(openings, lockstep=chosen.lockstep, lesson=chosen)

    return make


def replicated(specs: str, keys_trace: str = "lesson") -> Callable[[], SfqApp]:
    """Run specs (ui: replay --compare) on the replicas lesson's trace with its 4 slots, or on
    the Azure 2023 conversation trace (16 Zipf users) with the 32 slots of docs/replicas.md."""

    def make() -> SfqApp:
        if keys_trace == "lesson":
            trace, slots = LESSON_TRACES / "premium-regular.parquet", 4
            LESSONS["replicas"].write(trace)
        else:
            trace, slots = LESSON_TRACES / "azure2023-conv.parquet", 32
            if not trace.exists():  # imported once for the shots of it
                subprocess.run([sys.executable, "-m", "sfqtui", "import", "azure", str(AZURE_CONV), "-o", str(trace), "--users", "16",
                                "--assign", "zipf", "--seed", "0"], check=True, capture_output=True)
        base = ReplayConfig("sfq", slots=slots)
        openings = [Opening(trace, is_log=False, config=spec.config(base), slots_given=True) for spec in parse_run_specs(specs)]
        return SfqApp(openings, lockstep="dispatch")

    return make


HASHED_4 = "sfq@replicas=4,router=hash,share=none"
AT_USER_01 = ["g", *"t=1500", "enter", "u", *"user-01", "enter"]  # replica 1 sends user-01's request while user-00 waits on replica 3
AZURE_CONV = TRACES / "real" / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
WIDE = (160, 46)
# (file name, the app, keys to press, terminal size)
SHOTS: list[tuple[str, Callable[[], SfqApp], list[str], tuple[int, int]]] = [
    ("seed-example-tie.svg", single("seed-example.parquet", "sfq"), ["n"], (120, 34)),
    ("seed-example-step3.svg", single("seed-example.parquet", "sfq"), ["n", "n", "n"], (120, 34)),
    ("demo-heavy-user.svg", single("demo.parquet", "sfq"), ["g", *"160", "enter", "n"], (120, 34)),
    ("demo-idle-reset.svg", single("demo.parquet", "sfq"), ["g", *"330", "enter", "r"], (120, 34)),
    ("trickle-sfq-reset.svg", single("trickle.parquet", "sfq-reset"), ["g", *"900", "enter", "u", *"trickle", "enter"], (120, 34)),
    ("heavy-vs-light-drr.svg", single("heavy-vs-light.parquet", "drr"), ["g", *"200", "enter", "n"], (120, 34)),
    ("calibration-view.svg", single("calibration.parquet", "sfq"), ["c"], (120, 34)),
    ("lesson-worked-example.svg", lesson("worked-example"), ["n"] * 5, WIDE),
    ("lesson-worked-example-end.svg", lesson("worked-example"), ["end"], WIDE),
    ("lesson-heavy-vs-light.svg", lesson("heavy-vs-light"), ["n"] * 16, WIDE),
    ("lesson-idle-return.svg", lesson("idle-return"), ["g", *"t=5.2", "enter", "n"], WIDE),
    ("lesson-trickle.svg", lesson("trickle"), ["g", *"t=30", "enter", "n"], WIDE),
    ("lesson-global-idle.svg", lesson("global-idle"), ["r", "n"], WIDE),
    ("lesson-weights.svg", lesson("weights"), ["n"] * 6, WIDE),
    ("lesson-estimate-vs-actual.svg", lesson("estimate-vs-actual"), ["g", *"t=300", "enter", "n"], WIDE),
    ("lesson-replicas.svg", lesson("replicas"), ["n"] * 10, WIDE),
    ("lesson-replicas-end.svg", lesson("replicas"), ["end"], WIDE),
    ("replicas-dashboard.svg", replicated(HASHED_4, "azure"), AT_USER_01, WIDE),
    ("replicas-replica-3.svg", replicated(HASHED_4, "azure"), [*AT_USER_01, *"kkkk"], WIDE),
    ("replicas-side-by-side.svg", replicated("sfq,sfq@replicas=2,router=hash,share=none"), ["n"] * 10, WIDE),
]


async def shoot(out: Path, name: str, make: Callable[[], SfqApp], keys: list[str], size: tuple[int, int]) -> None:
    app = make()
    async with app.run_test(size=size) as pilot:
        while app.loading or not all(run.checked or run.audit_failure or not _audited(run) for run in app.runs):
            await pilot.pause(0.02)
        for key in keys:
            await pilot.press(key)
        await app.workers.wait_for_complete()  # views that measure on a worker (calibration, a lesson's outcome)
        await pilot.pause()
        app.save_screenshot(filename=name, path=str(out))


def _audited(run) -> bool:
    traits = run.table.traits
    return traits is not None and traits.audit is not None


# Who sends what to the proxy: a user with long answers and a big max_tokens, two with short ones.
TRAFFIC = {"batch-team": (6, 24, 400), "chat-app": (5, 4, 64), "notebook": (4, 6, 96)}  # requests, words, max_tokens
LIVE_SHOT = "attach-live.svg"


@contextlib.contextmanager
def _server(command: list[str], url_on_stderr: bool) -> Iterator[str]:
    """A server process for a ``with`` block; its URL is the first it prints."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = (proc.stderr if url_on_stderr else proc.stdout).readline()  # type: ignore[union-attr]  # started with stdout and stderr=PIPE
        if "http://" not in line:
            raise RuntimeError(f"{command[1:4]} did not start: {line}")
        yield "http://" + line.split("http://")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(30)


async def _ask(url: str, user: str, n: int, words: int, max_tokens: int) -> None:
    body = {"model": "m", "stream": True, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": " ".join(f"{user}-{n}-{k}" for k in range(words))}]}
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer key-{user}"}) as answer:
            async for _ in answer.aiter_bytes():
                pass


async def shoot_live(out: Path, size: tuple[int, int] = (120, 34)) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys.toml"
        keys.write_text("".join(f'[keys."key-{user}"]\nuser = "{user}"\n' for user in TRAFFIC))
        with _server([sys.executable, "tests/fake_upstream.py", "--chunk-delay", "0.03"], url_on_stderr=False) as upstream, \
                _server([sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream, "--listen", "127.0.0.1:0", "--slots", "2",
                         "--keys", str(keys)], url_on_stderr=True) as proxy:
            app = SfqApp(LiveOpening(proxy))
            async with app.run_test(size=size) as pilot:
                while app.current.connection != "live":
                    await pilot.pause(0.05)
                jobs = [asyncio.create_task(_ask(proxy, user, n, words, cap))
                        for n in range(max(count for count, _, _ in TRAFFIC.values()))
                        for user, (count, words, cap) in TRAFFIC.items() if n < count]
                # Part way: some answered, the rest waiting in their users' queues.
                while len(app.table.dispatches) < 8:
                    await pilot.pause(0.05)
                await pilot.pause(0.3)
                app.save_screenshot(filename=LIVE_SHOT, path=str(out))
                for job in jobs:  # the answers still to come are not in the picture
                    job.cancel()
                await asyncio.gather(*jobs, return_exceptions=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        asyncio.run(shoot(out, *shot))
        print(f"wrote {out / shot[0]}")
    asyncio.run(shoot_live(out))
    print(f"wrote {out / LIVE_SHOT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
