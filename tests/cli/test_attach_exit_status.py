"""`sfqtui attach` to a URL that answers but serves no event stream (the engine's port, a web
page) is refused for good: after the dashboard shows it, the command ends with one line saying
what was refused and which URL to give, and exit status 2, as bad input does."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.terminal import Terminal


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def web_server(folder: Path) -> Iterator[str]:
    """A loopback HTTP server of ``folder``'s files: any other path answers 404."""
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietFiles, directory=str(folder))) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


def test_a_url_without_an_event_stream_ends_with_one_line_and_exit_2(tmp_path: Path) -> None:
    with web_server(tmp_path) as url, Terminal("attach", url) as term:
        term.wait_for("● refused")
        _, code = term.exit_after("q")
    assert code == 2, term.shown[-2000:]
    errors = [line[line.index("sfqtui: error:"):].strip() for line in term.shown.splitlines() if "sfqtui: error:" in line]
    assert errors == [f"sfqtui: error: HTTP 404 from {url}: no /v1/sfq/events there, so not an sfqtui proxy at that address; "
                      "give the proxy's base URL, as its --listen says (e.g. http://127.0.0.1:8080)"], errors
    assert "Traceback" not in term.shown
