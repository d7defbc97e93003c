"""What the estimator needs from an OpenAI request body: prompt tokens, the output cap, the model.

The proxy has no tokenizer (it fronts any model), so prompt tokens are approximated:
one token per 4 characters of text (OpenAI's rule of thumb for English), or the exact
count when a completions prompt is given as token ids; at least 1. The prompt's blocks
(``blocks_of``, for the record and prefix placement) are named from the same text. The cap is
``max_completion_tokens`` (or the older ``max_tokens``) times ``n``, the number of
choices asked for, since usage counts the output of all of them.
"""

from __future__ import annotations

from typing import Any

from sfqtui.core.engines.prompt_blocks import CHARS_PER_TOKEN, prompt_blocks


def _text(content: Any) -> str:
    """The text of a chat message's content: a string, or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def _prompt_parts(prompt: Any, texts: list[str], ids: list[int]) -> None:
    """Add a completions prompt's text and token ids (a string, token ids, or a list of either) to ``texts`` and ``ids``."""
    if isinstance(prompt, str):
        texts.append(prompt)
    elif isinstance(prompt, list):
        if all(isinstance(item, int) for item in prompt):
            ids.extend(prompt)
        else:
            for item in prompt:
                _prompt_parts(item, texts, ids)


def prompt_of(body: dict[str, Any]) -> tuple[str, list[int]]:
    """The text and the token ids of a chat (``messages``) or completions (``prompt``) request."""
    messages = body.get("messages")
    if isinstance(messages, list):
        return "".join(_text(m.get("content")) for m in messages if isinstance(m, dict)), []
    texts: list[str] = []
    ids: list[int] = []
    _prompt_parts(body.get("prompt"), texts, ids)
    return "".join(texts), ids


def prompt_tokens(body: dict[str, Any]) -> int:
    """Approximate prompt tokens of a chat (``messages``) or completions (``prompt``) request."""
    text, ids = prompt_of(body)
    return max(1, len(ids) + -(-len(text) // CHARS_PER_TOKEN))


def blocks_of(body: dict[str, Any], block_tokens: int) -> list[int]:
    """The chained hashes of the prompt's whole blocks (``sfqtui.core.engines.prompt_blocks``)."""
    text, ids = prompt_of(body)
    return prompt_blocks(text, ids, block_tokens)


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def output_cap(body: dict[str, Any]) -> int | None:
    """The most output tokens the request can produce, or None when it sets no cap."""
    cap = _positive_int(body.get("max_completion_tokens")) or _positive_int(body.get("max_tokens"))
    if cap is None:
        return None
    return cap * (_positive_int(body.get("n")) or 1)


def model_of(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    return model if isinstance(model, str) else None
