"""The core stays pure: importing it loads neither the UI nor the dataframe stack."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_MODULES = [f"sfqtui.core.{p.relative_to(ROOT / 'sfqtui' / 'core').with_suffix('').as_posix().replace('/', '.')}"
                for p in sorted((ROOT / "sfqtui" / "core").rglob("*.py")) if p.name != "__init__.py"]
FORBIDDEN = ["textual", "rich", "polars", "pyarrow", "numpy"]
HEADLESS_COMMANDS = ["sfqtui.cli.simulate", "sfqtui.cli.check", "sfqtui.cli.compare", "sfqtui.cli.importing", "sfqtui.cli.gen",
                     "sfqtui.cli.calibrate", "sfqtui.cli.sweep", "sfqtui.cli.explain"]


def loaded_by(modules: list[str], watched: list[str]) -> str:
    """Which of ``watched`` importing ``modules`` in a fresh interpreter loads."""
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"print(','.join(m for m in {watched!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return result.stdout.strip()


def test_core_imports_load_no_ui_or_dataframes() -> None:
    assert len(CORE_MODULES) > 15
    assert loaded_by(CORE_MODULES, FORBIDDEN) == ""


def test_headless_commands_never_load_textual() -> None:
    assert loaded_by(HEADLESS_COMMANDS, ["textual"]) == ""


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--config", "pyproject.toml"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken." in result.stdout  # with: the package never imports matplotlib


def test_the_proxy_loads_no_dataframes_unless_it_records() -> None:
    assert loaded_by(["sfqtui.cli.proxy", "sfqtui.proxy.server"], ["polars", "pyarrow", "numpy", "textual", "sfqtui.live"]) == ""


def test_the_dashboards_stream_client_never_loads_the_proxy() -> None:
    assert loaded_by(["sfqtui.live.source", "sfqtui.runs.live"], ["sfqtui.proxy", "starlette", "uvicorn", "aiohttp"]) == ""
