"""ruff and mypy over the repository, as pyproject.toml configures them, so that `pytest` runs them in CI."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = ["sfqtui", "tests", "benchmarks", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.py"))]


def run(*command: str) -> None:
    result = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}"


def test_ruff_is_clean() -> None:
    # --config: the project's settings decide, whatever ruff finds in the user's own configuration.
    run("ruff", "check", "--config", str(ROOT / "pyproject.toml"), *PATHS)


@pytest.mark.long
def test_mypy_is_clean() -> None:
    run("mypy", "--config-file", str(ROOT / "pyproject.toml"), *PATHS)
