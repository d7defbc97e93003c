"""What the engine reads from an OpenAI request body: the prompt's size, the output's length, streaming.

No tokenizer: prompt tokens are one per 4 characters of text (rounded up; at least 1), or the
count of token ids when a completions prompt is given as ids; the same rule the sfqtui proxy
estimates with, so that the proxy's estimate and the engine's usage agree; the prompt's blocks
(for the prefix cache) are named from the same text, as the proxy names them. The output is
exactly ``max_completion_tokens`` (or ``max_tokens``) tokens, as with vLLM's ``ignore_eos``,
or the engine's ``output_tokens`` when the request sets neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sfqtui.core.engines.prompt_blocks import CHARS_PER_TOKEN, prompt_blocks


class BadRequest(ValueError):
    """A request body the engine cannot serve; the message says why."""


def _text_and_ids(value: Any, texts: list[str], ids: list[int]) -> None:
    """Add the text and token ids of a prompt, a message's content, or a list of them, to ``texts`` and ``ids``."""
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, dict):
        _text_and_ids(value.get("text"), texts, ids)
    elif isinstance(value, list):
        if value and all(isinstance(item, int) and not isinstance(item, bool) for item in value):
            ids.extend(value)
        else:
            for item in value:
                _text_and_ids(item, texts, ids)


def _count(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadRequest(f"{name} must be a whole number of at least 1")
    return value


@dataclass(frozen=True)
class Ask:
    """One request as the engine serves it."""

    chat: bool
    model: str | None
    prompt_tokens: int
    output_tokens: int
    stream: bool
    include_usage: bool
    blocks: tuple[int, ...] = ()  # the prompt's chained block hashes (none when the engine keeps no prefix cache)


def ask_of(body: Any, chat: bool, default_output_tokens: int, block_tokens: int | None = None) -> Ask:
    """The request in ``body``; with ``block_tokens``, its prompt's blocks are named too."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list")
        prompt: Any = [m.get("content") for m in messages if isinstance(m, dict)]
    else:
        if "prompt" not in body:
            raise BadRequest("prompt is required")
        prompt = body["prompt"]
    texts: list[str] = []
    ids: list[int] = []
    _text_and_ids(prompt, texts, ids)
    text = "".join(texts)
    if (_count(body, "n") or 1) != 1:
        raise BadRequest("the emulated engine answers one choice per request (n=1)")
    output = _count(body, "max_completion_tokens") or _count(body, "max_tokens") or default_output_tokens
    options = body.get("stream_options")
    model = body.get("model")
    return Ask(chat=chat, model=model if isinstance(model, str) else None, prompt_tokens=max(1, len(ids) + -(-len(text) // CHARS_PER_TOKEN)),
               output_tokens=output, stream=body.get("stream") is True,
               include_usage=isinstance(options, dict) and options.get("include_usage") is True,
               blocks=() if block_tokens is None else tuple(prompt_blocks(text, ids, block_tokens)))
