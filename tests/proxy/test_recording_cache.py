"""The --record keeps what the upstream's prefix cache held of each prompt (usage's
``prompt_tokens_details.cached_tokens``), streamed or not, and null where the upstream did not
say; and each prompt's blocks as the proxy names them, no more than its input_tokens hold."""

from __future__ import annotations

from pathlib import Path

import openai
import polars as pl
from openai.types.chat import ChatCompletionMessageParam

from sfqtui.proxy.prompt import blocks_of
from sfqtui.trace.write import read_metadata
from tests.fake_upstream import FakeUpstream, fake_server
from tests.proxy_fixtures import KEY_OF, openai_sync_http, running_proxy, write_keys


def test_the_record_keeps_the_cached_tokens_the_upstream_reported_and_the_prompts_blocks(tmp_path: Path) -> None:
    record = tmp_path / "record.parquet"
    sent: list[tuple[list[ChatCompletionMessageParam], bool]] = [
        ([{"role": "user", "content": "[cached] " + "a" * 75}], False),
        ([{"role": "user", "content": "[cached] " + "b" * 155}], True),
        ([{"role": "user", "content": "plain " + "c" * 30}], False),
        # the fake upstream counts the last message only: 1 token, so the proxy's 2 blocks are not recorded
        ([{"role": "system", "content": "x" * 128}, {"role": "user", "content": "y"}], True),
    ]
    with fake_server(FakeUpstream()) as upstream, running_proxy(upstream.url, write_keys(tmp_path / "keys.toml"), record=record) as px:
        client = openai.OpenAI(http_client=openai_sync_http(), base_url=f"{px.url}/v1", api_key=KEY_OF["alice"], max_retries=0)
        for messages, stream in sent:  # one at a time: the rows' arrival order is this order
            if stream:  # without include_usage: the proxy asks for usage itself
                chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
                assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            else:
                assert client.chat.completions.create(model="m", messages=messages).choices
    rows = pl.read_parquet(record).sort("arrival_s")
    assert rows.schema["cached_tokens"] == pl.Int64 and rows.schema["prefix_blocks"] == pl.List(pl.UInt64)
    last = [str(messages[-1].get("content")) for messages, _ in sent]
    expected = [(len(p) // 4 + 1) // 2 if p.startswith("[cached]") else None for p in last]
    assert rows["cached_tokens"].to_list() == expected and expected[0] and expected[1]
    blocks = [blocks_of({"messages": messages}, 16) for messages, _ in sent]
    assert [len(b) for b in blocks] == [1, 2, 0, 2]
    assert rows["prefix_blocks"].to_list() == [blocks[0], blocks[1], [], []]
    assert read_metadata(record)["block_tokens"] == 16
