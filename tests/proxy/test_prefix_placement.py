"""--placement prefix: a dispatched request goes to the upstream with room holding the longest
prefix of its prompt (by the proxy's index of what it sent where), bounded by load; recorded
with the upstream and what the index predicted. Two emulated engines with their prefix cache
behind a real proxy, asked with the official openai client."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import openai
import polars as pl
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from sfqtui.cli.app import app
from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.prefix_index import PrefixIndex
from sfqtui.emulator.server import EngineServer
from sfqtui.proxy.dispatcher import Placed
from sfqtui.proxy.placement import PrefixPlacement
from sfqtui.proxy.upstream import Upstreams
from sfqtui.trace.write import read_metadata
from tests.fake_upstream import FakeUpstream, ServerThread, fake_server
from tests.proxy_fixtures import KEY_OF, http_get, openai_sync_http, running_proxy, state, wait_for, write_keys

ENGINE = EngineModel(decode_ms_per_token=1.0, prefill_us_per_token=10.0)


def test_the_index_finds_the_longest_prefix_sent_and_forgets_a_prompts_tail_first() -> None:
    first, second = PrefixIndex(4), PrefixIndex(4)
    first.sent([1, 2, 3])
    assert (first.lookup([1, 2, 9]), first.lookup([1, 2, 3, 4]), second.lookup([1, 2, 3]), first.lookup([])) == (2, 3, 0, 0)
    first.sent([7, 8])  # 5 blocks for 4 places: the oldest prompt's tail leaves, its head stays
    assert first.lookup([1, 2, 3]) == 2 and first.lookup([7, 8]) == 2


def test_the_placement_prefers_a_warm_upstream_only_while_it_has_room() -> None:
    indexes = [PrefixIndex(100) for _ in range(3)]
    indexes[2].sent([5, 6])
    indexes[1].sent([5])
    room = {0: True, 1: True, 2: True}
    placement = PrefixPlacement(indexes, room.__getitem__, 16)
    assert placement.order([0, 1, 2], [5, 6, 7]) == [2, 0, 1]
    assert placement.order([0, 1, 2], [9]) == [0, 1, 2]  # held nowhere: by room
    room[2] = False
    assert placement.order([0, 1, 2], [5, 6, 7]) == [1, 0, 2]  # the warmest is full: the next warmest with room
    room[1] = False
    assert placement.order([0, 1, 2], [5, 6, 7]) == [0, 1, 2]


@contextlib.contextmanager
def two_engines() -> Iterator[list[str]]:
    with ServerThread(EngineServer(ENGINE, "m")) as first, ServerThread(EngineServer(ENGINE, "m")) as second:
        yield [first.url, second.url]


def conversations(url: str) -> None:
    """Three users, each a conversation of four turns resending its history, one request at a time."""
    clients = {user: openai.OpenAI(http_client=openai_sync_http(), base_url=f"{url}/v1", api_key=key, max_retries=0)
               for user, key in KEY_OF.items()}
    history = {user: f"{user} opens a long conversation. " * 12 for user in clients}
    for turn in range(4):
        for user, client in clients.items():
            history[user] += f"turn {turn}: a question of some length, and its answer. " * 3
            assert client.chat.completions.create(model="m", max_tokens=2, messages=[{"role": "user", "content": history[user]}]).choices


@pytest.mark.parametrize("placement", ["room", "prefix"])
def test_prefix_placement_sends_each_conversation_where_its_history_is_held(placement: str, tmp_path: Path) -> None:
    record = tmp_path / "record.parquet"
    with two_engines() as engines, running_proxy(engines[0], write_keys(tmp_path / "keys.toml"), upstreams=tuple(engines), slots=2,
                                                 record=record, placement=placement) as px:
        conversations(px.url)
        live = state(px.url)
        scraped = {(s.name, s.labels.get("upstream")): s.value for f in text_string_to_metric_families(http_get(f"{px.url}/metrics").text)
                   for s in f.samples}
    rows = pl.read_parquet(record).sort("arrival_s")
    assert read_metadata(record)["placement"] == placement and rows["upstream"].null_count() == 0
    by_user = rows.group_by("user").agg(pl.col("upstream").n_unique().alias("upstreams"), pl.col("cached_tokens").sum())
    hit = int(rows["cached_tokens"].sum()) / int(rows["input_tokens"].sum())
    if placement == "room":  # turns alternate between the engines: a conversation's history is held by the other one half the time
        assert rows["predicted_cached_tokens"].null_count() == len(rows) and "placement" not in live
        assert by_user["upstreams"].to_list() == [2, 2, 2] and hit < 0.6
    else:
        assert by_user["upstreams"].to_list() == [1, 1, 1]  # each conversation stays where its history is
        assert hit > 0.6
        later = rows.filter(pl.col("predicted_cached_tokens") > 0)
        assert len(later) == 9  # every turn after a user's first: the index knew where its history was
        # what the proxy predicted, whole blocks, the engine held (it recomputes a prompt's last token at most)
        assert (later["cached_tokens"] >= later["predicted_cached_tokens"] - 16).all()
        # live: the state and /metrics say what went where and what the index predicted
        placed = {row["upstream"]: row for row in live["placement"]}
        assert sum(row["placed"] for row in placed.values()) == 12
        for upstream, row in placed.items():
            sent = rows.filter(pl.col("upstream") == upstream)
            assert row["predicted_cached_tokens"] == sent["predicted_cached_tokens"].sum() > 0
            assert scraped["sfqtui_upstream_prefix_predicted_cached_tokens_total", upstream] == row["predicted_cached_tokens"]
            assert scraped["sfqtui_upstream_prefix_prompt_tokens_total", upstream] == row["prompt_tokens"] >= row["predicted_cached_tokens"]


def test_a_warm_upstream_without_room_is_passed_over(tmp_path: Path) -> None:
    """Fixed slots 2 over 2 upstreams: each has room for 1. While the warm one holds a request,
    the next with the same prefix goes to the other."""
    record = tmp_path / "record.parquet"
    history = "a shared history long enough for several blocks. " * 8
    warm, cold = FakeUpstream(), FakeUpstream()
    with fake_server(warm) as first, fake_server(cold) as second, \
            running_proxy(first.url, write_keys(tmp_path / "keys.toml"), upstreams=(first.url, second.url), slots=2, record=record,
                          placement="prefix") as px:
        client = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{px.url}/v1", api_key=KEY_OF["alice"], max_retries=0)
        client.chat.completions.create(model="m", max_tokens=1, messages=[{"role": "user", "content": history + "one"}])
        hold = history + "[held] two"
        thread = threading.Thread(target=lambda: client.chat.completions.create(
            model="m", max_tokens=1, messages=[{"role": "user", "content": hold}]))
        thread.start()
        wait_for(lambda: any(hold in str(body) for body in warm.seen + cold.seen), what="the held request to reach an upstream")
        client.chat.completions.create(model="m", max_tokens=1, messages=[{"role": "user", "content": history + "three"}])
        (warm if any(hold in str(body) for body in warm.seen) else cold).release(hold)
        thread.join(timeout=30)
    rows = pl.read_parquet(record).sort("arrival_s")
    first_up, held_up, third_up = rows["upstream"].to_list()
    assert held_up == first_up and third_up != first_up  # the warm upstream was full: the third went to the cold one
    assert rows["predicted_cached_tokens"].to_list()[1] > 0 and rows["predicted_cached_tokens"].to_list()[2] == 0


def test_a_bad_placement_is_refused_in_one_line(cli: CliRunner, tmp_path: Path) -> None:
    keys = write_keys(tmp_path / "keys.toml")
    for args, says in ((["--placement", "affinity"], "--placement 'affinity': expected one of room, prefix"),
                       (["--prefix-index-blocks", "0"], "--prefix-index-blocks must be >= 1")):
        result = cli.invoke(app, ["proxy", "--upstream", "http://127.0.0.1:9", "--slots", "2", "--keys", str(keys), *args])
        assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_request_is_placed_as_it_is_dispatched_and_its_place_held_until_it_is_sent_or_ends() -> None:
    upstreams = Upstreams(["http://127.0.0.1:9", "http://127.0.0.1:10"], 5.0)
    first, second = upstreams.place(()), upstreams.place(())
    assert {first.index, second.index} == {0, 1} and upstreams.inflight == [1, 1]  # the second dispatch saw the first's place taken
    upstreams.forget(first)  # ended before it was sent
    upstreams.forget(first)
    assert upstreams.inflight[first.index] == 0 and upstreams.inflight[second.index] == 1


async def test_a_placed_request_whose_upstream_refuses_goes_on_to_the_next() -> None:
    with fake_server(FakeUpstream()) as live:
        upstreams = Upstreams(["http://127.0.0.1:9", live.url], 5.0)
        placed = Placed(0, None)  # placed on the dead one, as place() holds it
        upstreams.inflight[0] += 1
        reply = await upstreams.open("GET", "/v1/models", placed=placed)
        assert reply.index == 1 and upstreams.inflight == [0, 1]
        upstreams.forget(placed)  # sent (elsewhere): nothing to give back
        await reply.aclose()
        assert upstreams.inflight == [0, 0]
        await upstreams.aclose()
