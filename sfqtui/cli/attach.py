"""`sfqtui attach`: the dashboard on a live proxy's event stream."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sfqtui.attach.source import WINDOW
from sfqtui.attach.stream import REFUSED
from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.core.gcpause import keep_out_of_collections
from sfqtui.core.numbers import counted
from sfqtui.paths import check_output
from sfqtui.runs.stream_opening import LiveOpening

if TYPE_CHECKING:
    from sfqtui.ui.app import SfqApp  # the dashboard loads only once the arguments are checked


@refuses_bad_input
def attach(
    urls: Annotated[list[str], typer.Argument(help="The proxy's base URL, e.g. http://127.0.0.1:8080 (its OpenAI URL ending in /v1 works too); "
                                                   "several: replicas of one group, followed one at a time.", metavar="URL...", show_default=False)],
    token: Annotated[
        str | None,
        typer.Option("--token", help="The bearer token the proxy was started with (--events-token).", envvar="SFQTUI_EVENTS_TOKEN"),
    ] = None,
    record: Annotated[Path | None, typer.Option("--record", help="Save the stream as event logs that `sfqtui replay` opens and `sfqtui check` accepts, "
                                                                    "written when the dashboard closes: one per proxy run, the first at PATH, the next ones at "
                                                                    "PATH with .run2, .run3, ... before the suffix (x.parquet, x.run2.parquet).")] = None,
    window: Annotated[int, typer.Option("--window", help="Events kept in memory; older ones only in --record.")] = WINDOW,
) -> None:
    """Watch a live SFQ proxy (`sfqtui proxy`, or any server speaking docs/protocol.md):
    the same views as replay, following the newest event unless you step back or press
    space. Reconnects with backoff and resumes where it stopped; events lost in between
    show as a gap row, after which the state is read again from the proxy. The status
    line shows the connection: the URL followed, or why none is (unreachable, connection
    lost, the proxy stopped) and when the next attempt comes.

    Given several URLs (replicas sharing one store serve the same stream), it follows the
    first that answers and moves to the next when that one goes away, without losing or
    repeating an event; a URL that serves another proxy run is not of the group and is not
    followed. A restarted proxy is a new run: its events start again from seq 0, the
    status line says since when, and `e` shows the earlier runs' events.
    """
    from sfqtui.ui.app import SfqApp

    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise fail(f"{url!r} is not an http(s) URL; give the proxy's base URL, e.g. http://127.0.0.1:8080")
    if window < 1000:
        raise fail("--window must be at least 1000 events")
    if record is not None:
        check_output(record, "--record")
    opening = LiveOpening(tuple(urls), token, record, window)
    dashboard = SfqApp(opening)
    try:
        dashboard.run()
    finally:
        recording = opening.recording
        if recording is not None:
            recording.close()  # already closed by the dashboard's loading thread, unless it died
    # Nothing is collected any more: the interpreter's exit then skips walking the whole heap (half a second).
    keep_out_of_collections()
    if recording is not None:
        for path, events in recording.saved:
            print(f"saved {counted(events, 'event')} to {path}")
        for problem in recording.problems:
            print(f"sfqtui: error: --record: {problem}", file=sys.stderr)
    refused = _refusal(dashboard)
    if refused is not None:
        raise fail(refused)  # it says what was refused and what to give instead (sfqtui/attach/stream.py)
    if recording is not None and recording.problems:
        raise typer.Exit(1)


def _refusal(dashboard: SfqApp) -> str | None:
    """Why the stream was refused for good (no event stream at the URL, a wrong token), if it was."""
    run = dashboard.open_runs.live_run()
    link = run.live.link if run is not None and run.live is not None else None
    return link.detail if link is not None and link.state == REFUSED else None
