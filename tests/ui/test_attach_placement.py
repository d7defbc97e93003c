"""attach to a proxy that places by prefix: two emulated engines (`sfqtui engine`, with their
prefix caches) behind a real proxy with --placement prefix, on loopback, asked with the official
openai client. Each dispatch event names the upstream the request was placed on and the prompt
tokens the proxy's index predicted it held; each complete event the tokens the engine found
cached (its usage); the dashboard shows them per upstream in the cost shares pane, and where the
winner went in the why panel, from those events alone."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from sfqtui.core.numbers import count
from sfqtui.proxy.server import ProxyServer
from sfqtui.runs.stream_opening import LiveOpening
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.shares import SharesPanel
from tests.dashboard import LIVE_SIZE, seen, text_of, until
from tests.proxy.test_prefix_placement import conversations, two_engines
from tests.proxy_fixtures import ask, read_events, running_proxy, state, write_keys


async def test_the_dashboard_shows_where_a_live_proxy_placed_its_requests(tmp_path: Path) -> None:
    with two_engines() as engines, running_proxy(engines[0], write_keys(tmp_path / "keys.toml"), upstreams=tuple(engines), slots=2,
                                                 placement="prefix") as px:
        app = SfqApp(LiveOpening(px.url))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            await asyncio.to_thread(conversations, px.url)  # 3 users, 4 turns each, one request at a time
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the app to catch up")
            events = read_events(px.url)
            placement = {row["upstream"]: row for row in state(px.url)["placement"]}
            dispatches = [e for e in events if e["kind"] == "dispatch"]
            # The events say what the state says: every dispatch names its upstream and the prediction there.
            assert Counter(e["upstream"] for e in dispatches) == {u: row["placed"] for u, row in placement.items()}
            for upstream, row in placement.items():
                assert sum(e["predicted_cached_tokens"] for e in dispatches if e["upstream"] == upstream) == row["predicted_cached_tokens"]
            upstream_of = {e["request_id"]: e["upstream"] for e in dispatches}
            found: Counter[str] = Counter()
            for e in events:
                if e["kind"] == "complete":
                    found[upstream_of[e["request_id"]]] += e["cached_tokens"]
            assert sum(found.values()) > 0
            # The shares pane: per upstream, requests placed, the prediction and what the engine found.
            shares = text_of(app.query_one(SharesPanel))
            assert "placed on" in shares and "predicted" in shares and "cached" in shares
            for upstream, row in placement.items():
                cells = next(line for line in shares.splitlines() if upstream in line).split()
                assert cells[1] == count(row["placed"]) and cells[-2:] == [count(row["predicted_cached_tokens"]), count(found[upstream])], cells
            # The why panel on the last dispatch: where the winner went, what was predicted there, what its engine found.
            last = dispatches[-1]
            completed = next(e for e in events if e["kind"] == "complete" and e["request_id"] == last["request_id"])
            await pilot.press("p")  # from the newest event (a completion) back to the last dispatch
            assert app.table.request_id(app.cursor.k) == last["request_id"] and app.table.kind_name(app.cursor.k) == "dispatch"
            why = " ".join(app.query_one(ExplainPanel).text.split())
            assert (f"placed on {last['upstream']}, where the proxy's index predicted {count(last['predicted_cached_tokens'])} tokens "
                    "of its prompt cached") in why, why
            assert f"its engine found {count(completed['cached_tokens'])} tokens of its prompt cached" in why, why
        assert isinstance(px.server, ProxyServer)
        assert px.server.proxy.upstreams.inflight == [0, 0]  # each place held at dispatch was given back once


async def test_an_upstream_that_says_nothing_of_its_cache_gets_no_prefix_cache_line(fake, keys_path: Path) -> None:
    """One upstream whose usage says no cached tokens: the why panel says where the winner went,
    and nothing of a prefix cache (a live stream's tables have every column, all null here); the
    shares pane has no placement table for a lone upstream."""
    _, upstream_url = fake
    with running_proxy(upstream_url, keys_path) as px:
        app = SfqApp(LiveOpening(px.url))
        async with app.run_test(size=LIVE_SIZE) as pilot:
            await until(pilot, lambda: app.current.connection == "live", "the stream to be live")
            await asyncio.to_thread(ask, px.url, 2, "bob")
            await until(pilot, lambda: seen(app) == state(px.url)["seq"], "the app to catch up")
            await pilot.press("p")
            assert app.table.kind_name(app.cursor.k) == "dispatch"
            why = " ".join(app.query_one(ExplainPanel).text.split())
            assert "placed on 127.0.0.1:" in why and "prefix cache" not in why, why
            assert "placed on" not in text_of(app.query_one(SharesPanel))
