"""What `pip install sfqtui` installs works without the repository: the wheel, built from the
package's own files, installed in a new venv and run from an empty folder with no checkout in
reach, opens the demo, lists the lessons and writes a scenario."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import polars as pl
import pytest

from sfqtui.scenarios import generate
from sfqtui.scenarios.lessons import LESSONS

pytestmark = pytest.mark.xdist_group("test_wheel")  # one worker builds and installs the wheel once

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120  # each step; the machine may be busy


class Installed:
    """A venv with only the wheel installed in it; the dependencies are the test venv's, on sys.path."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.site = next((folder / "lib").glob("python*/site-packages"))
        self.elsewhere = folder.parent / "elsewhere"  # where the commands run: an empty folder
        self.elsewhere.mkdir()

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")} | env
        return subprocess.run([str(self.folder / "bin" / args[0]), *args[1:]], cwd=self.elsewhere, env=clean,
                              capture_output=True, text=True, timeout=TIMEOUT_S)

    def headless(self, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
        """Run a dashboard command without a terminal; textual saves what is on screen after 4 s and quits."""
        shot = self.elsewhere / "screen.svg"
        shot.unlink(missing_ok=True)
        done = self.run(*args, TEXTUAL_DRIVER="textual.drivers.headless_driver:HeadlessDriver", TEXTUAL_SCREENSHOT="4",
                        TEXTUAL_SCREENSHOT_LOCATION=str(shot.parent), TEXTUAL_SCREENSHOT_FILENAME=shot.name, COLUMNS="120", LINES="34")
        return done, shot.read_text() if shot.exists() else ""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    # Build from a copy holding only what the build reads: a build in the checkout leaves a
    # build/ folder there, whose stale files would go into the next wheel.
    source = work / "source"
    shutil.copytree(ROOT / "sfqtui", source / "sfqtui", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # With the setuptools of the test extras, through its PEP 517 hook as `pip wheel --no-build-isolation`
    # calls it (without pip's own start, half the CPU): an isolated build would fetch it from the index every time.
    subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_wheel({str(work / 'dist')!r})"],
                   cwd=source, check=True, capture_output=True, timeout=TIMEOUT_S)
    (wheel,) = (work / "dist").glob("sfqtui-*.whl")
    venv.create(work / "venv", with_pip=False)
    installed = Installed(work / "venv")
    # The test venv's packages, as plain folders on sys.path: its own .pth files (among them
    # the editable install of this checkout) are not read from there.
    ours = dict.fromkeys(sysconfig.get_path(kind) for kind in ("purelib", "platlib"))
    (installed.site / "dependencies.pth").write_text("".join(f"{path}\n" for path in ours))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(installed.folder / "bin" / "python"), "install", "--no-deps", "--quiet", str(wheel)],
                   check=True, capture_output=True, timeout=TIMEOUT_S)
    return installed


@pytest.mark.long
def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    done = installed.run("python", "-c", "import sys, sfqtui; print(sfqtui.__file__); print(*sys.path, sep='\\n')")
    where, *path = done.stdout.splitlines()
    assert Path(where).is_relative_to(installed.site), where
    assert not any(entry and Path(entry).resolve() == ROOT for entry in path)


def test_the_demo_opens_from_an_install(installed: Installed) -> None:
    done, screen = installed.headless("sfqtui", "demo")
    assert done.returncode == 0, done.stderr
    assert "dave-batch" in screen and "dispatch" in screen  # the demo's users, and its events in the log


def test_the_lessons_are_listed_from_an_install(installed: Installed) -> None:
    done = installed.run("sfqtui", "teach", "--list")
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines() if not line[:1].isspace()] == list(LESSONS)  # a lesson's command is indented below it


def test_gen_writes_a_scenario_from_an_install(installed: Installed) -> None:
    done = installed.run("sfqtui", "gen", "premium-regular", "-o", "t.parquet")
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(installed.elsewhere / "t.parquet").equals(generate("premium-regular"))
