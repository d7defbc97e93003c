"""`sfqtui attach URL1 URL2`: replicas of one group serve the same seqs under the same run
id; the client follows the first that answers and moves to the next when it goes away,
without a hole or a repeat, and never follows a URL that serves another run.

Until replicas share a store, one proxy reached through two TCP relays stands for two
replicas of one group: killing a relay is a replica going away.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa

from sfqtui.attach.stream import EventStream, RunStarted, Status
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.status_line import StatusLine
from tests.dashboard import LIVE_SIZE, seen, text_of, until
from tests.proxy_fixtures import ask, running_proxy, state, wait_for
from tests.tcp_relay import TcpRelay


class Follower:
    """An EventStream over several URLs, iterated in a thread of its own as the dashboard does."""

    def __init__(self, urls: list[str]) -> None:
        self.stream = EventStream(urls, backoff_s=(0.05, 0.2))
        self.items: list[Any] = []
        self._thread = threading.Thread(target=lambda: self.items.extend(self.stream), daemon=True)
        self._thread.start()

    def seqs(self) -> list[int]:
        return [seq for item in self.items if isinstance(item, pa.Table) for seq in item["seq"].to_pylist()]

    def statuses(self) -> list[Status]:
        return [item for item in self.items if isinstance(item, Status)]

    def runs(self) -> list[RunStarted]:
        return [item for item in self.items if isinstance(item, RunStarted)]

    def followed(self) -> list[str]:
        """The URLs it was live on, in order, each once in a row."""
        live = [status.url for status in self.statuses() if status.state == "live"]
        return [url for k, url in enumerate(live) if k == 0 or live[k - 1] != url]

    def caught_up(self, url: str) -> None:
        wait_for(lambda: self.seqs()[-1:] == [state(url)["seq"]], what="the follower to catch up")

    def stop(self) -> None:
        self.stream.close()
        self._thread.join(5)


def test_the_stream_moves_to_the_next_url_without_a_hole_or_a_repeat(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        one, two = TcpRelay(px.port), TcpRelay(px.port)
        follower = Follower([one.url, two.url])
        ask(px.url, 3)
        follower.caught_up(px.url)
        one.close()  # the replica followed goes away
        ask(px.url, 3, user="alice")
        follower.caught_up(px.url)
        assert follower.stream.url == two.url
        two.cut()  # the second one's connection drops too: it comes back to it (the first one is gone for good)
        ask(px.url, 2, user="carol")
        follower.caught_up(px.url)
        follower.stop()
        two.close()
        last, run_id = state(px.url)["seq"], state(px.url)["run"]
    assert follower.seqs() == list(range(last + 1))  # no hole, no repeat
    assert follower.followed() == [one.url, two.url]
    [run] = follower.runs()  # one run throughout
    assert run.run == run_id and not run.restarted


def test_a_url_that_serves_another_run_is_not_followed(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as ours, running_proxy(upstream_url, keys_path) as other:
        ask(other.url, 2)  # another proxy, with events of its own run
        relay = TcpRelay(ours.port)
        follower = Follower([relay.url, other.url])
        ask(ours.url, 1)
        follower.caught_up(ours.url)
        ours_run, other_run = state(ours.url)["run"], state(other.url)["run"]
        relay.close()  # ours goes away; the other URL answers, with another run
        expected = f"{other.url} serves another run ({other_run}), not the group of run {ours_run}"
        wait_for(lambda: any(expected in status.detail for status in follower.statuses()), what="the refusal")
        follower.stop()
        last = state(ours.url)["seq"]
    assert follower.seqs() == list(range(last + 1))  # nothing of the other run
    assert follower.followed() == [relay.url] and len(follower.runs()) == 1


async def test_the_status_line_says_which_url_is_followed(fake, keys_path: Path) -> None:
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        one, two = TcpRelay(px.port), TcpRelay(px.port)
        app = SfqApp(LiveOpening((one.url, two.url)))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            assert f"● live {one.url.removeprefix('http://')}" in text_of(app.query_one(StatusLine))
            ask(px.url, 2)
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the events")
            one.close()
            ask(px.url, 2, user="alice")
            live = app.current.live
            assert live is not None
            await until(pilot, lambda: seen(app) == state(px.url)["seq"] and live.link is not None and live.link.url == two.url,
                        "the move to the second URL")
            assert f"● live {two.url.removeprefix('http://')}" in text_of(app.query_one(StatusLine))
            assert len(app.table) == state(px.url)["seq"] + 1 and app.table.first_seq == 0
        two.close()
