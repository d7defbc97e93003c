"""Export the SVG screenshots used in docs/guide.md, docs/tutorial.md, docs/proxy.md and docs/replicas.md, from the app itself.

The proxy's picture is of `sfqtui attach` on a real proxy (`sfqtui proxy`, in front of
the tests' fake upstream, run in a thread of this script, both on loopback) while three users send it requests.

Usage: python docs/make_screenshots.py [OUTPUT_DIR]   (default: docs/img)

tests/house/test_docs.py runs this into a temporary folder, so the script keeps working;
rerun it after changing the screen and commit the new images.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx

from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.run_spec import parse_run_specs
from sfqtui.importers.convert import import_trace
from sfqtui.importers.options import ImportOptions, Users
from sfqtui.runs.opening import Opening
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import SfqApp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fake_upstream import FakeUpstream, fake_server, server_process  # noqa: E402 - the tests' upstream and way of running a server

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
            if not trace.exists():  # imported once for the shots of it, as `sfqtui import azure --users 16 --assign zipf --seed 0`
                import_trace("azure", [AZURE_CONV], trace, ImportOptions(users=Users(count=16, assign="zipf", seed=0), seed=0))
        base = ReplayConfig("sfq", slots=slots)
        openings = [Opening(trace, is_log=False, config=spec.config(base), slots_given=True) for spec in parse_run_specs(specs)]
        return SfqApp(openings, lockstep="dispatch")

    return make


HASHED_4 = "sfq@replicas=4,router=hash,share=none"
AT_USER_01 = ["g", *"t=1500", "enter", "u", *"user-01", "enter"]  # replica 1 sends user-01's request while user-00 waits on replica 3
AZURE_CONV = TRACES / "real" / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
WIDE = (160, 46)
# (the app, terminal size, then each shot it takes: file name, keys pressed since the one before).
# Shots of one app follow on from each other, so that it loads and checks its runs once; only
# where the later picture is the same as from a fresh app (a panel scrolled by an earlier shot
# wraps its text otherwise).
SHOTS: list[tuple[Callable[[], SfqApp], tuple[int, int], list[tuple[str, list[str]]]]] = [
    (single("seed-example.parquet", "sfq"), (120, 34), [("seed-example-tie.svg", ["n"]), ("seed-example-step3.svg", ["n", "n"])]),
    (single("demo.parquet", "sfq"), (120, 34), [("demo-heavy-user.svg", ["g", *"160", "enter", "n"])]),
    (single("demo.parquet", "sfq"), (120, 34), [("demo-idle-reset.svg", ["g", *"330", "enter", "r"])]),
    (single("trickle.parquet", "sfq-reset"), (120, 34), [("trickle-sfq-reset.svg", ["g", *"900", "enter", "u", *"trickle", "enter"])]),
    (single("heavy-vs-light.parquet", "drr"), (120, 34), [("heavy-vs-light-drr.svg", ["g", *"200", "enter", "n"])]),
    (single("calibration.parquet", "sfq"), (120, 34), [("calibration-view.svg", ["c"])]),
    (lesson("worked-example"), WIDE, [("lesson-worked-example.svg", ["n"] * 5), ("lesson-worked-example-end.svg", ["end"])]),
    (lesson("heavy-vs-light"), WIDE, [("lesson-heavy-vs-light.svg", ["n"] * 16)]),
    (lesson("idle-return"), WIDE, [("lesson-idle-return.svg", ["g", *"t=5.2", "enter", "n"])]),
    (lesson("trickle"), WIDE, [("lesson-trickle.svg", ["g", *"t=30", "enter", "n"])]),
    (lesson("global-idle"), WIDE, [("lesson-global-idle.svg", ["r", "n"])]),
    (lesson("weights"), WIDE, [("lesson-weights.svg", ["n"] * 6)]),
    (lesson("estimate-vs-actual"), WIDE, [("lesson-estimate-vs-actual.svg", ["g", *"t=300", "enter", "n"])]),
    (lesson("replicas"), WIDE, [("lesson-replicas.svg", ["n"] * 10)]),
    (lesson("replicas"), WIDE, [("lesson-replicas-end.svg", ["end"])]),
    (replicated(HASHED_4, "azure"), WIDE, [("replicas-dashboard.svg", AT_USER_01), ("replicas-replica-3.svg", [*"kkkk"])]),
    (replicated("sfq,sfq@replicas=2,router=hash,share=none"), WIDE, [("replicas-side-by-side.svg", ["n"] * 10)]),
]


async def shoot(out: Path, make: Callable[[], SfqApp], size: tuple[int, int], shots: list[tuple[str, list[str]]]) -> None:
    app = make()
    async with app.run_test(size=size) as pilot:
        while app.loading or not all(run.checked or run.audit_failure or not _audited(run) for run in app.runs):
            await asyncio.sleep(0.02)  # not pilot.pause, which paints the screen each time
        for name, keys in shots:
            for key in keys:
                await pilot.press(key)
            await app.workers.wait_for_complete()  # views that measure on a worker (calibration, a lesson's outcome)
            await pilot.pause()
            app.save_screenshot(filename=name, path=str(out))
            print(f"wrote {out / name}")


def _audited(run) -> bool:
    traits = run.table.traits
    return traits is not None and traits.audit is not None


# Who sends what to the proxy: a user with long answers and a big max_tokens, two with short ones.
TRAFFIC = {"batch-team": (6, 24, 400), "chat-app": (5, 4, 64), "notebook": (4, 6, 96)}  # requests, words, max_tokens
LIVE_SHOT = "attach-live.svg"


async def _ask(client: httpx.AsyncClient, url: str, user: str, n: int, words: int, max_tokens: int) -> None:
    body = {"model": "m", "stream": True, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": " ".join(f"{user}-{n}-{k}" for k in range(words))}]}
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer key-{user}"}) as answer:
        async for _ in answer.aiter_bytes():
            pass


async def shoot_live(out: Path, size: tuple[int, int] = (120, 34)) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys.toml"
        keys.write_text("".join(f'[keys."key-{user}"]\nuser = "{user}"\n' for user in TRAFFIC))
        with fake_server(FakeUpstream(chunk_delay_s=0.03)) as upstream, \
                server_process([sys.executable, "-m", "sfqtui", "proxy", "--upstream", upstream.url, "--listen", "127.0.0.1:0", "--slots", "2",
                                "--keys", str(keys)], ROOT) as proxy:
            app = SfqApp(LiveOpening(proxy))
            # One client for every request: each client builds a TLS context, tens of ms.
            async with app.run_test(size=size) as pilot, httpx.AsyncClient(timeout=60) as client:
                while app.current.connection != "live":
                    await asyncio.sleep(0.05)  # not pilot.pause, which paints the screen each time
                jobs = [asyncio.create_task(_ask(client, proxy, user, n, words, cap))
                        for n in range(max(count for count, _, _ in TRAFFIC.values()))
                        for user, (count, words, cap) in TRAFFIC.items() if n < count]
                # Part way: some answered, the rest waiting in their users' queues.
                while len(app.table.dispatches) < 8:
                    await asyncio.sleep(0.05)
                await pilot.pause(0.3)
                app.save_screenshot(filename=LIVE_SHOT, path=str(out))
                for job in jobs:  # the answers still to come are not in the picture
                    job.cancel()
                await asyncio.gather(*jobs, return_exceptions=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for shots in SHOTS:
        asyncio.run(shoot(out, *shots))
    asyncio.run(shoot_live(out))
    print(f"wrote {out / LIVE_SHOT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img")
