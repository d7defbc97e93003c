"""How a live run's connection reads on screen: the status line's part and the log's message until the first event.

The words come from the stream's ``Status`` (which URL, why it is down, when the next
attempt is) and the proxy runs seen: a countdown to the next attempt, "connection lost"
for a stream cut without a bye (a crash) against "the proxy stopped" for a clean
shutdown, and "new proxy run since HH:MM:SS" once the proxy restarted while attached
(unless an earlier run is shown: the line then says which, and when it ended). While a
group's bound is suspended, the line says so, since when and why.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from sfqtui.attach.bound import Bound
from sfqtui.attach.source import CLOSED
from sfqtui.attach.stream import CONNECTING, LIVE, RECONNECTING, REFUSED, STOPPED, UNREACHABLE, Status
from sfqtui.ui.widgets.fitted_line import Part, always, part

REASON_RANK = 8  # why the bound is suspended gives way last, with the counts (sfqtui.ui.panes.status_line)

_STYLES = {LIVE: "bold green", CONNECTING: "yellow", RECONNECTING: "bold yellow", UNREACHABLE: "bold red", STOPPED: "bold yellow",
           REFUSED: "bold red", CLOSED: "dim"}


@dataclass(frozen=True)
class Link:
    """What a frame of a live stream says about it: the connection, the proxy run
    followed, and, when an earlier proxy run is shown instead, which one."""

    status: Status
    new_run_since: float | None = None  # the start (Unix time) of the run followed, once the proxy restarted while attached
    viewing: str | None = None  # "proxy run 1 of 2, ended 12:03:04" when that one is shown


def clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _where(url: str) -> str:
    return url.split("://", 1)[-1]


def retrying(status: Status, now: float) -> str:
    """The countdown to the next attempt."""
    if status.retry_at is None:
        return "retrying now"
    left = math.ceil(status.retry_at - now)
    return f"retrying in {left} s" if left > 0 else "retrying now"


def connection_part(link: Link, now: float) -> tuple[str, str]:
    """The status line's words for the connection, and their style."""
    status = link.status
    state, detail = status.state, status.detail
    if state == LIVE:
        text = f"● live {_where(status.url)}"
        if link.new_run_since is not None and link.viewing is None:
            text += f"  new proxy run since {clock(link.new_run_since)}"
    elif state == CONNECTING:
        text = f"● connecting to {_where(status.url)}"
    elif state == RECONNECTING:
        text = f"● connection lost ({detail}), {retrying(status, now)}"
    elif state == UNREACHABLE:
        text = f"● unreachable: {detail}, {retrying(status, now)}"
    elif state == STOPPED:
        text = f"● {detail}, {retrying(status, now)}"
    elif state == REFUSED:
        text = f"● refused: {detail}"
    else:
        text = f"● {state}"
    return text, _STYLES.get(state, "bold red")


def bound_part(bound: Bound | None) -> tuple[Part, ...]:
    """While a group's bound is suspended: since when (or by when, when the proxy did not say) and why."""
    if bound is None or not bound.suspended:
        return ()
    when = f" {'by' if bound.by else 'since'} {clock(bound.since)}" if bound.since is not None else ""
    return (always(Text(f"  bound suspended{when}", "bold red")),
            part(REASON_RANK, Text(f": {bound.reason}", "red") if bound.reason else ""))


def waiting_message(link: Link, now: float) -> str:
    """What the log says while no event has come (after attaching, or since a new proxy run)."""
    status = link.status
    url, state, detail = status.url, status.state, status.detail
    if state == LIVE:
        return f"Connected to {url}: no event yet.\nEvents appear here as requests reach the proxy."
    if state == CONNECTING:
        return f"Connecting to {url} ...\nEvents appear here as the proxy publishes them."
    if state == UNREACHABLE:
        return (f"Nothing answers at {url}: {detail}.\n{retrying(status, now).capitalize()}. "
                "Is the proxy running there (sfqtui proxy --listen HOST:PORT)?")
    if state == RECONNECTING:
        return f"The connection to {url} was lost ({detail}).\n{retrying(status, now).capitalize()}."
    if state == STOPPED:
        return f"{detail.capitalize()} at {clock(status.since or time.time())}.\nWaiting for it to start again: {retrying(status, now)}."
    if state == REFUSED:
        return f"{detail}."  # it says what to do (sfqtui/attach/stream.py)
    return f"The stream ended ({detail or state})."


class WaitingForEvents(Static):
    """The log's message while a live run has no event to list."""

    DEFAULT_CSS = "WaitingForEvents { height: auto; padding: 1 2; color: $text-muted; }"

    @classmethod
    def show_over(cls, log: Widget, text: str | None) -> None:
        """Say ``text`` over the log (in its box), or nothing (None)."""
        waiting = log.screen.query(cls)
        if text is None:
            waiting.remove()
        elif waiting:
            waiting.first().update(text)
        else:
            log.parent.mount(cls(text), before=log)  # type: ignore[union-attr]  # the log is always in its box
