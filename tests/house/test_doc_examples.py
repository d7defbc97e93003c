"""The examples in docs/traces.md are run, and what they print is what the page shows.

An example is a fenced block whose first line starts with ``$ ``: each ``$ `` line is a
command, run from a scratch folder that sees the checkout's ``traces/`` and ``tests/``
(so the page's paths work and its outputs land nowhere in the checkout); the lines up to
the next command are what it prints, stdout and stderr as a terminal interleaves them.
``$ NAME=VALUE`` sets a variable later commands use as ``$NAME``. In what a command
prints, a line ``...`` stands for any lines, and a line ending in `` ...`` for any line
that starts with what comes before (a time taken, which differs from run to run). The
blocks run in the page's order, one after the other, as a reader would type them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from string import Template

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "traces.md"]
FENCE = re.compile(r"^( *)```[\w-]*\n(.*?)^\1```", re.S | re.M)  # a block in a list item is indented
SETTING = re.compile(r"(\w+)=(\S+)")
ANY_LINES = "..."
ANY_END = " ..."


def examples(page: Path) -> list[list[tuple[str, list[str]]]]:
    """Each example block of ``page`` as its commands, each with the lines it prints."""
    found = []
    for indent, block in FENCE.findall(page.read_text()):
        lines = [line.removeprefix(indent) for line in block.splitlines()]
        if not lines or not lines[0].startswith("$ "):
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        found.append(steps)
    return found


def matches(expected: list[str], printed: list[str]) -> bool:
    if not expected:
        return not printed
    first, rest = expected[0], expected[1:]
    if first == ANY_LINES:
        return any(matches(rest, printed[k:]) for k in range(len(printed) + 1))
    if not printed:
        return False
    same = printed[0].startswith(first[: -len(ANY_END)]) if first.endswith(ANY_END) else printed[0] == first
    return same and matches(rest, printed[1:])


def trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return [line.rstrip() for line in lines]


def run(command: str, folder: Path, cli: CliRunner) -> list[str]:
    argv = shlex.split(command)
    if argv[0] == "sfqtui":
        result = cli.invoke(app, argv[1:], env={"COLUMNS": None})  # piped: no terminal, no width said
        return result.output.splitlines()
    if argv[0] == "python":
        done = subprocess.run([sys.executable, *argv[1:]], cwd=folder, capture_output=True, text=True, timeout=120)
        return (done.stdout + done.stderr).splitlines()
    raise AssertionError(f"an example runs sfqtui or python, not {argv[0]!r}: {command}")


@pytest.mark.long
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_pages_examples_print_what_the_page_shows(page: Path, tmp_path: Path, cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    for shared in ("traces", "tests"):
        (tmp_path / shared).symlink_to(ROOT / shared)
    monkeypatch.chdir(tmp_path)
    variables: dict[str, str] = {}
    blocks = examples(page)
    assert blocks, f"{page.name} has no example"
    for steps in blocks:
        for command, shown in steps:
            command = Template(command).substitute(variables)
            if setting := SETTING.fullmatch(command):
                variables[setting[1]] = setting[2]
                continue
            printed = trimmed(run(command, tmp_path, cli))
            expected = trimmed(shown)
            assert matches(expected, printed), f"$ {command}\n--- the page shows:\n" + "\n".join(expected) + "\n--- it prints:\n" + "\n".join(printed)
