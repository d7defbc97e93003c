"""`sfqtui serve` refuses before serving, as `sfqtui replay` does: a port another server holds
(one line naming the option that picks another, exit 2, no traceback) and arguments that each
visitor's `sfqtui replay` would refuse (the same line and exit status)."""

from __future__ import annotations

import inspect
import re
import socket
import subprocess
import sys
from pathlib import Path

from sfqtui.cli.replay import serve

ROOT = Path(__file__).resolve().parents[2]
WITHIN_S = 120  # generous: a refusal comes at once; without the checks, the server would run until this


def sfqtui(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("sfqtui")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=ROOT, timeout=WITHIN_S, check=False)


def test_a_port_taken_is_one_line_naming_the_option_and_exit_2() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = sfqtui("serve", "--host", "127.0.0.1", "--port", str(port))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"sfqtui: error: port {port} is taken on 127.0.0.1 (another server listens there); --port picks another, e.g. --port {port + 1}"]


def test_a_missing_file_is_refused_as_replay_refuses_it() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    served = sfqtui("serve", "--host", "127.0.0.1", "--port", str(port), "--", "missing.parquet")
    replayed = sfqtui("replay", "missing.parquet")
    assert (served.returncode, served.stderr) == (replayed.returncode, replayed.stderr) == (2, "sfqtui: error: missing.parquet: no such file\n")
    assert "serving" not in served.stdout


def test_an_unknown_option_for_replay_is_refused_before_serving() -> None:
    done = sfqtui("serve", "--port", "1", "--", "--no-such-option")
    assert done.returncode == 2 and "No such option: --no-such-option" in done.stderr and "sfqtui replay" in done.stderr


def test_the_docs_start_the_engine_on_a_port_serve_and_the_proxy_leave_free() -> None:
    """The README runs `serve` and, further on, `engine` and `proxy`: a reader who starts them all gets no clash."""
    defaults = {inspect.signature(serve).parameters["port"].default, 8080}  # serve's, and the proxy's --listen
    for page in (ROOT / "README.md", ROOT / "docs" / "engine.md"):
        ports = {int(port) for port in re.findall(r"sfqtui engine --port (\d+)", page.read_text())}
        assert ports and not ports & defaults, page.name
