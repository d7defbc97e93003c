"""What the engine reads from an OpenAI request body: the prompt's size, the output's length, streaming.

No tokenizer: prompt tokens are one per 4 characters of text (rounded up; at least 1), or the
count of token ids when a completions prompt is given as ids; the same rule the sfqtui proxy
estimates with, so that the proxy's estimate and the engine's usage agree. The output is
exactly ``max_completion_tokens`` (or ``max_tokens``) tokens, as with vLLM's ``ignore_eos``,
or the engine's ``output_tokens`` when the request sets neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4


class BadRequest(ValueError):
    """A request body the engine cannot serve; the message says why."""


def _characters_and_ids(value: Any) -> tuple[int, int]:
    """Characters of text and token ids in a prompt, a message's content, or a list of them."""
    if isinstance(value, str):
        return len(value), 0
    if isinstance(value, dict):
        return _characters_and_ids(value.get("text"))
    if isinstance(value, list):
        if value and all(isinstance(item, int) and not isinstance(item, bool) for item in value):
            return 0, len(value)
        chars = ids = 0
        for item in value:
            more_chars, more_ids = _characters_and_ids(item)
            chars, ids = chars + more_chars, ids + more_ids
        return chars, ids
    return 0, 0


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


def ask_of(body: Any, chat: bool, default_output_tokens: int) -> Ask:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list")
        chars, ids = _characters_and_ids([m.get("content") for m in messages if isinstance(m, dict)])
    else:
        if "prompt" not in body:
            raise BadRequest("prompt is required")
        chars, ids = _characters_and_ids(body["prompt"])
    if (_count(body, "n") or 1) != 1:
        raise BadRequest("the emulated engine answers one choice per request (n=1)")
    output = _count(body, "max_completion_tokens") or _count(body, "max_tokens") or default_output_tokens
    options = body.get("stream_options")
    model = body.get("model")
    return Ask(chat=chat, model=model if isinstance(model, str) else None, prompt_tokens=max(1, ids + -(-chars // CHARS_PER_TOKEN)),
               output_tokens=output, stream=body.get("stream") is True,
               include_usage=isinstance(options, dict) and options.get("include_usage") is True)
