"""What the estimator needs from an OpenAI request body: prompt tokens, the output cap, the model.

The proxy has no tokenizer (it fronts any model), so prompt tokens are approximated:
one token per 4 characters of text (OpenAI's rule of thumb for English), or the exact
count when a completions prompt is given as token ids; at least 1. The cap is
``max_completion_tokens`` (or the older ``max_tokens``) times ``n``, the number of
choices asked for, since usage counts the output of all of them.
"""

from __future__ import annotations

from typing import Any

CHARS_PER_TOKEN = 4


def _text_length(content: Any) -> int:
    """Characters of text in a chat message's content: a string, or a list of parts."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(part["text"]) for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return 0


def _prompt_count(prompt: Any) -> tuple[int, int]:
    """(characters, token ids) in a completions prompt: a string, token ids, or a list of either."""
    if isinstance(prompt, str):
        return len(prompt), 0
    if isinstance(prompt, list):
        if all(isinstance(item, int) for item in prompt):
            return 0, len(prompt)
        chars = tokens = 0
        for item in prompt:
            more_chars, more_tokens = _prompt_count(item)
            chars += more_chars
            tokens += more_tokens
        return chars, tokens
    return 0, 0


def prompt_tokens(body: dict[str, Any]) -> int:
    """Approximate prompt tokens of a chat (``messages``) or completions (``prompt``) request."""
    messages = body.get("messages")
    if isinstance(messages, list):
        chars = sum(_text_length(m.get("content")) for m in messages if isinstance(m, dict))
        ids = 0
    else:
        chars, ids = _prompt_count(body.get("prompt"))
    return max(1, ids + -(-chars // CHARS_PER_TOKEN))


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
