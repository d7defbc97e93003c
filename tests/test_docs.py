"""The guide's screenshots come from the app itself; the script that makes them must keep working."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_screenshot_script_exports_every_image(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "docs" / "make_screenshots.py"), str(tmp_path)], check=True, capture_output=True)
    made = sorted(p.name for p in tmp_path.glob("*.svg"))
    committed = sorted(p.name for p in (ROOT / "docs" / "img").glob("*.svg"))
    assert made == committed and made
    for name in made:
        assert "sfqtui" in (tmp_path / name).read_text()


def test_guide_links_only_existing_images() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text()
    for name in (p.name for p in (ROOT / "docs" / "img").glob("*.svg")):
        assert f"img/{name}" in guide, f"{name} is not used in the guide"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in readme
