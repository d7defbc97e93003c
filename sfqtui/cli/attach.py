"""`sfqtui attach`: the dashboard on a live proxy's event stream."""

from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.live.source import WINDOW
from sfqtui.paths import check_output
from sfqtui.runs.live import LiveOpening


@refuses_bad_input
def attach(
    url: Annotated[str, typer.Argument(help="The proxy's base URL, e.g. http://127.0.0.1:8080 (its OpenAI URL ending in /v1 works too).", show_default=False)],
    token: Annotated[
        str | None,
        typer.Option("--token", help="The bearer token the proxy was started with (--events-token).", envvar="SFQTUI_EVENTS_TOKEN"),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option("--record", help="Save the stream as an event log that `sfqtui replay` opens (written when the dashboard closes)."),
    ] = None,
    window: Annotated[int, typer.Option("--window", help="Events kept in memory; older ones only in --record.")] = WINDOW,
) -> None:
    """Watch a live SFQ proxy (`sfqtui proxy`, or any server speaking docs/protocol.md):
    the same views as replay, following the newest event unless you step back or press
    space. Reconnects with backoff and resumes where it stopped; events lost in between
    show as a gap row, after which the state is read again from the proxy. The status
    line shows the connection: live, reconnecting or lost.
    """
    from sfqtui.ui.app import run_dashboard

    if not url.startswith(("http://", "https://")):
        raise fail(f"{url!r} is not an http(s) URL; give the proxy's base URL, e.g. http://127.0.0.1:8080")
    if window < 1000:
        raise fail("--window must be at least 1000 events")
    if record is not None:
        check_output(record, "--record")
    run_dashboard(LiveOpening(url, token, record, window))
