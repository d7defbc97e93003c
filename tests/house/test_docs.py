"""The guide's screenshots come from the app itself; the script that makes them must keep working."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sfqtui.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_screenshot_script_exports_every_image(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "docs" / "make_screenshots.py"), str(tmp_path)], check=True, capture_output=True)
    made = sorted(p.name for p in tmp_path.glob("*.svg"))
    committed = sorted(p.name for p in (ROOT / "docs" / "img").glob("*.svg"))
    assert made == committed and made
    for name in made:
        assert "sfqtui" in (tmp_path / name).read_text()


def test_every_image_is_used_and_every_link_exists() -> None:
    docs = "".join((ROOT / "docs" / page).read_text() for page in ("guide.md", "tutorial.md", "proxy.md", "replicas.md"))
    images = {p.name for p in (ROOT / "docs" / "img").glob("*.svg")}
    for name in images:
        assert f"img/{name}" in docs, f"{name} is not used in the guide, the tutorial, the proxy's or the replicas' page"
    for linked in re.findall(r"img/([\w.-]+\.svg)", docs):
        assert linked in images, f"{linked} is linked but not in docs/img"


def test_the_replicas_page_has_its_pictures() -> None:
    """docs/replicas.md shows the measures drawn by docs/make_replica_plots.py and the dashboard's screenshots."""
    page = (ROOT / "docs" / "replicas.md").read_text()
    linked = re.findall(r"\]\((img/[\w./-]+\.svg)\)", page)
    assert "img/replicas/measures.svg" in linked and any(not name.startswith("img/replicas/") for name in linked)
    for name in linked:
        assert (ROOT / "docs" / name).is_file(), f"{name} is linked from docs/replicas.md but missing"
    for drawn in (ROOT / "docs" / "img" / "replicas").glob("*.svg"):
        assert f"img/replicas/{drawn.name}" in linked, f"{drawn.name} is drawn but not shown in docs/replicas.md"


@pytest.mark.long
def test_the_replica_plot_script_draws_from_a_real_sweep(tmp_path: Path) -> None:
    out = tmp_path / "measures.svg"
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "make_replica_plots.py"), str(out), "--quick"],
                          check=True, capture_output=True, text=True)
    assert out.stat().st_size > 10_000 and "worst gap" in out.read_text() and "e+0" not in out.read_text()
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "router" not in line]
    assert len(rows) == 1 + 2 * 3 and rows[0].startswith("| 1 | - | - |")  # one SFQ, then K = 2 x hash, random x 3 shares


def test_the_readme_names_every_scenario_of_gen() -> None:
    readme = (ROOT / "README.md").read_text()
    listed = readme.split("Scenarios for `gen`:", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`([\w-]+)`", listed) == list(SCENARIOS)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in readme



def test_the_architecture_picture_is_drawn_from_the_code(tmp_path: Path) -> None:
    """docs/architecture.md shows every part of the package as docs/make_architecture_picture.py draws it from the code."""
    script = ROOT / "docs" / "make_architecture_picture.py"
    out = tmp_path / "parts.svg"
    subprocess.run([sys.executable, str(script), str(out)], check=True, capture_output=True)
    assert out.read_text().lstrip().startswith("<?xml")
    # The script's constants, read without running it: executing it here would import matplotlib into the test process.
    drawing = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(script.read_text()).body
               if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in ("LAYERS", "BESIDE")}
    drawn = {name for row in drawing["LAYERS"] for name in row} | set(drawing["BESIDE"])
    package = ROOT / "sfqtui"
    parts = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    parts |= {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")}
    assert drawn == parts, "a part of the package is missing from the picture (or the picture names one that is gone)"
    assert "](img/architecture/parts.svg)" in (ROOT / "docs" / "architecture.md").read_text()
    assert (ROOT / "docs" / "img" / "architecture" / "parts.svg").is_file()
