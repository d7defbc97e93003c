import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()
