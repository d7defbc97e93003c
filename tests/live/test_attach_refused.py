"""`sfqtui attach` refused: a wrong or missing token (the real proxy with --events-token)
and an address that is no sfqtui proxy (a Starlette app answering 404) say refused, the
HTTP status and what to do, and stay on screen (the stream ending does not replace it
with "closed")."""

from __future__ import annotations

from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette

from sfqtui.attach.source import LiveSource
from sfqtui.attach.stream import REFUSED, EventStream, Status
from sfqtui.ui.stream.connection import Link, connection_part, waiting_message
from tests.fake_upstream import ServerThread
from tests.proxy_fixtures import EVENTS_TOKEN, running_proxy


def refusal(url: str, token: str | None) -> Status:
    """The last status the stream yields (it ends after a refusal)."""
    statuses = [item for item in EventStream(url, token=token) if isinstance(item, Status)]
    assert statuses[-1].state == REFUSED, statuses
    return statuses[-1]


def connections(url: str, token: str | None) -> list[Status]:
    """What the dashboard is told about the connection, in order, until the source ends."""
    return [notice for notice, _ in LiveSource([url], token).batches() if isinstance(notice, Status)]


@pytest.mark.parametrize("token,says", [
    ("wrong", "the proxy refused the events token given; give the one it was started with (--events-token) with --token"),
    (None, "the proxy wants its events token; give the one it was started with (--events-token) with --token or SFQTUI_EVENTS_TOKEN"),
], ids=["wrong token", "no token"])
def test_a_token_the_proxy_refuses_says_401_and_to_give_its_events_token(token: str | None, says: str, fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path, events_token=EVENTS_TOKEN) as px:
        status = refusal(px.url, token)
        assert status.detail == f"HTTP 401 from {px.url}: {says}"
        seen = connections(px.url, token)
        assert seen[-1].state == REFUSED and seen[-1].detail == status.detail  # not "closed / the stream ended"
        text, _ = connection_part(Link(seen[-1]), 0.0)
        assert text == f"● refused: HTTP 401 from {px.url}: {says}"
        assert waiting_message(Link(seen[-1]), 0.0) == f"HTTP 401 from {px.url}: {says}."


def test_an_address_answering_404_is_not_an_sfqtui_proxy() -> None:
    app = Starlette()  # no routes: every path is 404
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    with ServerThread(server) as other:
        status = refusal(other.url, None)
        assert status.detail == (f"HTTP 404 from {other.url}: no /v1/sfq/events there, so not an sfqtui proxy at that address; "
                                 "give the proxy's base URL, as its --listen says (e.g. http://127.0.0.1:8080)")
        assert connections(other.url, None)[-1].detail == status.detail
