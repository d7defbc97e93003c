"""`sfqtui import` knows its formats from one registry: a name it does not know is refused with
every format it reads (the public traces' and the gateways' logs) and the closest to the name
given; the top-level help's line for `import` is a whole sentence."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.importers.formats import IMPORT_FORMATS
from sfqtui.importers.logs import LOG_READERS
from sfqtui.importers.readers import READERS


def test_the_registry_holds_every_reader() -> None:
    assert set(IMPORT_FORMATS) == set(READERS) | set(LOG_READERS)


@pytest.mark.parametrize(("typed", "meant"), [("litelm", "litellm"), ("envoy", "envoy-ai-gateway"), ("OTel", "otel"), ("json", "jsonl"),
                                              ("nothing-like-it", None)])
def test_an_unknown_format_lists_every_format_and_the_closest(typed: str, meant: str | None, cli: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "spend_logs.json"
    source.write_text("[]")
    result = cli.invoke(app, ["import", typed, str(source), "-o", str(tmp_path / "t.parquet")])
    closest = f" (did you mean {meant}?)" if meant else ""
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"sfqtui: error: unknown format {typed!r}{closest}; the formats: {', '.join(IMPORT_FORMATS)}"]
    assert not (tmp_path / "t.parquet").exists()


def test_the_top_level_help_says_what_import_does_in_whole_sentences(cli: CliRunner) -> None:
    shown = cli.invoke(app, ["--help"], env={"COLUMNS": "300"}).stdout
    [line] = [line for line in shown.splitlines() if line.lstrip("│ ").startswith("import ")]
    said = line.strip("│ ").removeprefix("import").strip()
    assert said.endswith(".") and "gateways' request logs" in said, said
