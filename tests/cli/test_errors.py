"""Bad input is one line and exit 2; a bug shows as a bug (its traceback and where to report it); every
command refuses an unknown scheduler name with the same line."""

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sfqtui
import sfqtui.cli.gen
from sfqtui.cli.app import app
from sfqtui.core.schedulers import SCHEDULERS

TRACES = Path(__file__).resolve().parents[2] / "traces"
SEED = str(TRACES / "seed-example.parquet")
CALIBRATION = str(TRACES / "calibration.parquet")
UNKNOWN = f"sfqtui: error: unknown scheduler(s) nope; choose from {', '.join(SCHEDULERS)}"


def invoke(cli: CliRunner, *args: str) -> tuple[int, str, str]:
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_validation_error_is_one_line_and_exit_2(tmp_path: Path, cli: CliRunner) -> None:
    code, out, err = invoke(cli, "simulate", SEED, "--slots", "0", "-o", str(tmp_path / "log.parquet"))
    assert code == 2 and out == ""
    assert err.splitlines() == ["sfqtui: error: --slots must be >= 1"]


@pytest.mark.parametrize("bug", [ZeroDivisionError("division by zero"), ValueError("an internal value went wrong")], ids=["ZeroDivisionError", "ValueError"])
def test_a_bug_shows_its_traceback_and_where_to_report_it(bug: Exception, tmp_path: Path, cli: CliRunner,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise bug

    monkeypatch.setattr(sfqtui.cli.gen, "generate", broken)
    code, _, err = invoke(cli, "gen", "seed-example", "-o", str(tmp_path / "t.parquet"))
    assert code not in (0, 2)
    assert "Traceback (most recent call last)" in err and f"{type(bug).__name__}: {bug}" in err
    assert "sfqtui: error:" not in err  # not dressed up as bad input
    report = err.splitlines()[-1]
    assert "please report it as a bug, with the command that caused it" in report and f"sfqtui {sfqtui.__version__} (Python " in report


def test_version_names_the_package_and_python() -> None:
    result = subprocess.run([sys.executable, "-m", "sfqtui", "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith(f"sfqtui {sfqtui.__version__} (Python {sys.version_info.major}.{sys.version_info.minor}.")


@pytest.mark.parametrize("args", [
    ["simulate", SEED, "-o", "unused.parquet", "--scheduler", "nope"],
    ["replay", SEED, "--scheduler", "nope"],
    ["replay", SEED, "--compare", "nope"],
    ["compare", SEED, "--schedulers", "sfq,nope"],
    ["explain", SEED, "r000001", "--scheduler", "nope"],
    ["explain", SEED, "r000001", "--compare", "nope"],
    ["sweep", SEED, "--schedulers", "nope", "--workers", "1"],
], ids=lambda args: " ".join(a for a in args if not a.endswith(".parquet")))
def test_every_command_refuses_an_unknown_scheduler_with_the_same_line(args: list[str], tmp_path: Path, cli: CliRunner,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(cli, *args)
    assert (code, out, err.splitlines()) == (2, "", [UNKNOWN])


def test_calibrate_names_the_schedulers_it_can_calibrate(cli: CliRunner) -> None:
    code, _, err = invoke(cli, "calibrate", CALIBRATION, "--scheduler", "vtc")
    assert code == 2
    assert err.splitlines() == ["sfqtui: error: scheduler(s) not available here: vtc; choose from sfq, sfq-reset, drr, fifo, rr, llm-d, dynamo, litellm, las"]
