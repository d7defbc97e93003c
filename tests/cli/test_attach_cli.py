"""`sfqtui attach` run as an operator runs it, in a terminal: `q` quits at once whatever the
stream does (idle, a server that never answers, a connection gone silent); a `--record`
path that cannot be written is refused before the dashboard opens; a recording that
cannot be written at quit says so in one line, exits non-zero and keeps what it can.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.trace.eventlog import read_log
from tests.proxy_fixtures import ask, running_proxy, state
from tests.tcp_relay import TcpRelay
from tests.terminal import Terminal

# "At once": before any of the waits a quit must not sit through (the stream client's connect
# timeout, 5 s; the proxy's keepalive, 15 s; the idle timeout, 45 s), with room for a loaded
# machine to tear the process down (1 s was hit by scheduling alone).
QUIT_WITHIN_S = 3.0


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A loopback server that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for sock in held:
            sock.close()


def test_q_quits_at_once_on_an_idle_proxy(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px, Terminal("attach", px.url) as term:
        term.wait_for("● live")
        time.sleep(1.0)  # nothing happens on the proxy
        elapsed, code = term.exit_after("q")
    assert code == 0, term.shown[-2000:]
    assert elapsed < QUIT_WITHIN_S


def test_q_quits_at_once_when_the_server_never_answers() -> None:
    with silent_server() as url, Terminal("attach", url) as term:
        term.wait_for("● connecting")
        time.sleep(1.0)  # the request is sent; no answer comes
        elapsed, code = term.exit_after("q")
    assert code == 0 and elapsed < QUIT_WITHIN_S


def test_q_quits_at_once_when_a_live_connection_goes_silent(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        relay = TcpRelay(px.port)
        with Terminal("attach", relay.url) as term:
            term.wait_for("● live")
            relay.freeze()  # half-open: the socket stays up, no byte comes through
            ask(px.url, 1)
            time.sleep(1.0)
            elapsed, code = term.exit_after("q")
        relay.close()
    assert code == 0 and elapsed < QUIT_WITHIN_S


def test_a_record_path_that_cannot_be_written_is_refused_before_the_dashboard(cli: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "x.parquet"
    for record, says in ((missing, f"the folder {missing.parent} does not exist"), (tmp_path, "is a directory")):
        result = cli.invoke(app, ["attach", "http://127.0.0.1:9", "--record", str(record)])
        assert result.exit_code == 2
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"sfqtui: error: --record {record}: ")
        assert says in result.stderr
    assert not missing.parent.exists()


def test_a_recording_that_cannot_be_written_at_quit_says_so_and_keeps_the_events(fake, keys_path: Path, tmp_path: Path,
                                                                                 cli: CliRunner) -> None:
    _, upstream_url = fake
    folder, spare = tmp_path / "gone", tmp_path / "tmp"
    folder.mkdir()
    spare.mkdir()
    with running_proxy(upstream_url, keys_path) as px:
        with Terminal("attach", px.url, "--record", str(folder / "x.parquet"), env={"TMPDIR": str(spare)}) as term:
            term.wait_for("● live")
            ask(px.url, 2)
            last = state(px.url)["seq"]
            term.wait_for(f"seq {last:,} (last {last:,}) complete")  # the status line: the last event is on screen
            shutil.rmtree(folder)  # the folder is removed while attached
            _, code = term.exit_after("q")
    assert code == 1
    errors = [line for line in term.shown.splitlines() if "sfqtui: error:" in line]
    assert len(errors) == 1 and "Traceback" not in term.shown
    [fallback] = spare.glob("x-*.parquet")
    assert f"could not write {folder / 'x.parquet'} (No such file or directory); saved {last + 1:,} events to {fallback} instead" in errors[0], repr(errors[0])
    df, _ = read_log(fallback)
    assert df["seq"].to_list() == list(range(last + 1))
    assert cli.invoke(app, ["check", str(fallback)]).exit_code == 0
