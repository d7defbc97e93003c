"""Output files: a path no file can be written at is refused before any work (one line,
exit 2, nothing written), and a write that fails or is killed leaves no file behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.errors import InputError
from sfqtui.paths import atomic_output, check_output

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "traces" / "demo.parquet"


def _commands(out: str, folder: Path) -> dict[str, list[str]]:
    csv = folder / "requests.csv"
    csv.write_text("arrival,prompt,output\n0,10,5\n1,20,6\n")
    return {
        "simulate": ["simulate", str(DEMO), "-o", out],
        "gen": ["gen", "equal", "-o", out],
        "import": ["import", "csv", str(csv), "-o", out, "--map", "arrival_s=arrival,input_tokens=prompt,output_tokens=output"],
        "sweep": ["sweep", str(DEMO), "--schedulers", "sfq", "-o", out],
        "attach": ["attach", "http://127.0.0.1:9", "--record", out],
        "proxy": ["proxy", "--upstream", "http://127.0.0.1:9", "--keys", str(folder / "keys.toml"), "--slots", "1", "--record", out],
    }


@pytest.fixture
def no_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    """attach must refuse before its dashboard opens; should it not, the test fails instead of hanging."""
    def opened(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the dashboard opened")

    monkeypatch.setattr("sfqtui.ui.app.run_dashboard", opened)


@pytest.mark.parametrize("command", ["simulate", "gen", "import", "sweep", "attach", "proxy"])
@pytest.mark.parametrize("where", ["missing folder", "directory"])
def test_an_unwritable_output_is_refused_before_any_work(command: str, where: str, tmp_path: Path, cli: CliRunner,
                                                         no_dashboard: None) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    out = tmp_path / "no-such-folder" / "out.parquet" if where == "missing folder" else tmp_path
    args = _commands(str(out), inputs)[command]
    before = sorted(tmp_path.rglob("*"))
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    expected = "does not exist" if where == "missing folder" else "is a directory"
    assert lines[0].startswith("sfqtui: error: --") and expected in lines[0]
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, no .part left


def test_a_device_or_the_input_itself_is_refused(tmp_path: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["simulate", str(DEMO), "-o", "/dev/null"])
    assert result.exit_code == 2 and "not a regular file" in result.stderr
    trace = tmp_path / "t.parquet"
    trace.write_bytes(DEMO.read_bytes())
    result = cli.invoke(app, ["simulate", str(trace), "-o", str(trace)])
    assert result.exit_code == 2 and "is also the file being read" in result.stderr
    assert trace.read_bytes() == DEMO.read_bytes()


def test_check_output_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--record .*: the folder .* does not exist$"):
        check_output(tmp_path / "a" / "b.parquet", "--record")
    assert check_output(tmp_path / "b.parquet") == tmp_path / "b.parquet"


def _written_file_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed file", "named .part"])
def test_a_write_that_fails_leaves_nothing(unnamed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not unnamed:
        monkeypatch.setattr("sfqtui.paths._unnamed_file", lambda _folder: None)
    target = tmp_path / "out.parquet"
    with pytest.raises(InputError, match=r"out.parquet: could not be written \(No space left on device\); no partial file was left"):
        with atomic_output(target) as tmp:
            Path(tmp).write_bytes(b"half a file")
            raise OSError(28, "No space left on device")
    with pytest.raises(RuntimeError):  # not a refusal of the system's: passed on as it is
        with atomic_output(target) as tmp:
            Path(tmp).write_bytes(b"half a file")
            raise RuntimeError("a bug")
    assert _written_file_names(tmp_path) == []
    with atomic_output(target) as tmp:
        Path(tmp).write_bytes(b"whole")
    assert _written_file_names(tmp_path) == ["out.parquet"] and target.read_bytes() == b"whole"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_symlinked_output_replaces_the_file_it_points_to(tmp_path: Path) -> None:
    real = tmp_path / "real.parquet"
    real.write_bytes(b"old")
    link = tmp_path / "link.parquet"
    link.symlink_to(real)
    with atomic_output(link) as tmp:
        Path(tmp).write_bytes(b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_simulate_that_runs_out_of_disk_leaves_no_file(tmp_path: Path, cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    out = tmp_path / "log.parquet"
    result = cli.invoke(app, ["simulate", str(DEMO), "-o", str(out)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"sfqtui: error: {out}: could not be written (No space left on device); no partial file was left"
    assert _written_file_names(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="unnamed files are Linux's O_TMPFILE")
def test_a_writer_killed_midway_leaves_nothing(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, signal
        import polars as pl
        from sfqtui.paths import atomic_output
        with atomic_output({str(tmp_path / 'out.parquet')!r}) as tmp:
            pl.DataFrame({{"x": list(range(100_000))}}).write_parquet(tmp)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert result.returncode == -9
    assert _written_file_names(tmp_path) == []


def test_import_writes_its_metadata_in_one_pass(tmp_path: Path, cli: CliRunner) -> None:
    csv = tmp_path / "requests.csv"
    csv.write_text("arrival,prompt,output\n0,10,5\n1,20,6\n")
    out = tmp_path / "t.parquet"
    result = cli.invoke(app, ["import", "csv", str(csv), "-o", str(out), "--map", "arrival_s=arrival,input_tokens=prompt,output_tokens=output"])
    assert result.exit_code == 0, result.output
    from sfqtui.trace.write import read_metadata

    assert read_metadata(out)["format"] == "csv"
    assert pl.read_parquet(out).height == 2
    assert _written_file_names(tmp_path) == ["requests.csv", "t.parquet"]
