"""A prompt's blocks as the proxy and the emulated engine name them: whole blocks of 4
characters a token, chained, stable across processes, and the same on both sides."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from sfqtui.core.engines.prompt_blocks import prompt_blocks
from sfqtui.emulator.requests import ask_of
from sfqtui.proxy.prompt import blocks_of, prompt_tokens


def test_only_whole_blocks_are_named_and_each_hash_carries_the_blocks_before_it() -> None:
    a, b, c = "a" * 8, "b" * 8, "c" * 8  # blocks of 2 tokens: 8 characters
    assert len(prompt_blocks(a + b + "c" * 7, [], 2)) == 2
    first, second = prompt_blocks(a + b, [], 2), prompt_blocks(a + c, [], 2)
    assert first[0] == second[0] and first[1] != second[1]
    # the same second block after another first block is another hash: chained, not per block
    assert prompt_blocks(c + b, [], 2)[1] != first[1]
    assert prompt_blocks("", [1, 2, 3, 4, 5], 2) == prompt_blocks("", [1, 2, 3, 4], 2) != prompt_blocks("", [1, 2, 3, 5], 2)
    assert prompt_blocks("", [1, 2], 2) != prompt_blocks("", [12], 1)


def test_the_hashes_are_the_same_in_another_process() -> None:
    code = "from sfqtui.core.engines.prompt_blocks import prompt_blocks; print(prompt_blocks('x' * 200, [], 16))"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)}
    assert runs == {f"{prompt_blocks('x' * 200, [], 16)}\n"}


BODIES: list[tuple[bool, dict[str, Any]]] = [
    (True, {"messages": [{"role": "system", "content": "s" * 70}, {"role": "user", "content": "hello " * 30}]}),
    (True, {"messages": [{"role": "user", "content": [{"type": "text", "text": "part " * 40}, {"type": "image_url"}]}]}),
    (False, {"prompt": "a completion prompt " * 10}),
    (False, {"prompt": list(range(100))}),
    (False, {"prompt": ["one " * 20, "two " * 20]}),
]


@pytest.mark.parametrize(("chat", "body"), BODIES)
def test_the_proxy_and_the_engine_name_a_prompts_blocks_alike(chat: bool, body: dict[str, Any]) -> None:
    ask = ask_of(body, chat, 16, block_tokens=4)
    assert list(ask.blocks) == blocks_of(body, 4) and ask.blocks
    assert ask.prompt_tokens == prompt_tokens(body) >= len(ask.blocks) * 4
