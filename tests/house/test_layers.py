"""The core stays pure: importing it loads neither the UI nor the dataframe stack."""

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
CORE_MODULES = [f"sfqtui.core.{p.relative_to(ROOT / 'sfqtui' / 'core').with_suffix('').as_posix().replace('/', '.')}"
                for p in sorted((ROOT / "sfqtui" / "core").rglob("*.py")) if p.name != "__init__.py"]
FORBIDDEN = ["textual", "rich", "polars", "pyarrow", "numpy"]
MOST_LINES = 450  # a module longer than this does more than one job
HEADLESS_COMMANDS = ["sfqtui.cli.simulate", "sfqtui.cli.check", "sfqtui.cli.compare", "sfqtui.cli.importing", "sfqtui.cli.gen",
                     "sfqtui.cli.calibrate", "sfqtui.cli.sweep", "sfqtui.cli.explain", "sfqtui.cli.fit"]


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
    assert "Contracts: 11 kept, 0 broken." in result.stdout  # with: no matplotlib, the layers, the core's layers, the proxy's one HTTP client, no cycle


def test_the_proxy_loads_no_dataframes_unless_it_records() -> None:
    assert loaded_by(["sfqtui.cli.proxy", "sfqtui.proxy.server"], ["polars", "pyarrow", "numpy", "textual", "sfqtui.attach"]) == ""


def test_the_dashboards_stream_client_never_loads_the_proxy() -> None:
    assert loaded_by(["sfqtui.attach.source", "sfqtui.runs.stream_opening"], ["sfqtui.proxy", "starlette", "uvicorn", "aiohttp"]) == ""


def test_no_module_is_over_450_lines() -> None:
    lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in (ROOT / "sfqtui").rglob("*.py")}
    assert len(lengths) > 100
    assert {path: n for path, n in lengths.items() if n > MOST_LINES} == {}


def import_cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm): each is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module) & modules:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycle_type_only_imports_included() -> None:
    graph = grimp.build_graph("sfqtui", exclude_type_checking_imports=False)
    modules = graph.modules
    assert len(modules) > 100 and "sfqtui.ui.app" in modules
    assert import_cycles(graph, modules) == []


def test_a_type_only_import_back_is_a_cycle() -> None:
    graph = grimp.build_graph("sfqtui", exclude_type_checking_imports=False)
    graph.add_import(importer="sfqtui.ui.commands.palette", imported="sfqtui.ui.app")  # as `if TYPE_CHECKING: from sfqtui.ui.app import SfqApp`
    assert any({"sfqtui.ui.app", "sfqtui.ui.commands.palette"} <= set(cycle) for cycle in import_cycles(graph, graph.modules))
