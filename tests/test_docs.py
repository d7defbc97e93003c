"""The guide's screenshots come from the app itself; the script that makes them must keep working."""

import re
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


def test_every_image_is_used_and_every_link_exists() -> None:
    docs = "".join((ROOT / "docs" / page).read_text() for page in ("guide.md", "tutorial.md", "proxy.md"))
    images = {p.name for p in (ROOT / "docs" / "img").glob("*.svg")}
    for name in images:
        assert f"img/{name}" in docs, f"{name} is not used in the guide, the tutorial or the proxy's page"
    for linked in re.findall(r"img/([\w.-]+\.svg)", docs):
        assert linked in images, f"{linked} is linked but not in docs/img"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in readme
