"""The core stays pure: importing it loads neither the UI nor the dataframe stack."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_MODULES = [
    "sfqtui.core.engine.replay",
    "sfqtui.core.schedulers",
    "sfqtui.core.engine.estimator",
    "sfqtui.core.analysis.audit",
    "sfqtui.core.analysis.fairness",
    "sfqtui.core.log.rows",
]
FORBIDDEN = ["textual", "rich", "polars", "pyarrow", "numpy"]


def test_core_imports_load_no_ui_or_dataframes() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE_MODULES)
        + f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert result.stdout.strip() == "", f"core loaded {result.stdout.strip()}"


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--config", "pyproject.toml"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout
