"""keys.toml: which user each API key belongs to, and the users' weights.

    [keys."sk-alice-laptop"]
    user = "alice"
    weight = 2.0          # optional, > 0; a user has one weight

Keys are secrets: nothing made from a KeyBook (messages, events, metrics, files) names one,
so errors point at lines and never quote what they found there (it may be a key).
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

from sfqtui.errors import InputError

_FIELDS = ("user", "weight")
_NAMING_ERRORS = ("Cannot declare", "Cannot mutate", "Cannot redefine")
_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column \d+|at end of document)\)$")


class KeyBook:
    """API key -> user, and user -> weight. Its repr never shows a key."""

    __slots__ = ("_users", "weights")

    def __init__(self, users: dict[str, str], weights: dict[str, float]) -> None:
        self._users = users
        self.weights = weights

    def user_of(self, key: str | None) -> str | None:
        return None if key is None else self._users.get(key)

    def weight(self, user: str) -> float:
        return self.weights.get(user, 1.0)

    @property
    def users(self) -> list[str]:
        return sorted(set(self._users.values()))

    def __repr__(self) -> str:
        return f"KeyBook({len(self._users)} keys, {len(self.users)} users)"


def _flatten(value: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for name, inner in value.items():
            paths += _flatten(inner, prefix + (name,))
    return paths


def _lines_of(text: str) -> dict[tuple[str, ...], int]:
    """Where each table and key of a valid TOML file is first written (line numbers from 1).

    tomllib gives no positions, so each line is parsed on its own under the table it
    sits in; lines that only make sense with their neighbours (multi-line values) are
    skipped, and what they hold is found through the table that holds it.
    """
    found: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            parsed = tomllib.loads(stripped)
        except tomllib.TOMLDecodeError:
            continue
        is_header = stripped.startswith("[")
        paths = _flatten(parsed, () if is_header else table)
        for path in paths:
            found.setdefault(path, number)
        if is_header and paths:
            table = paths[-1] if not stripped.startswith("[[") else ()
    return found


def load_keys(path: Path) -> KeyBook:
    """Read and check keys.toml; InputError naming the file and line of the first problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the keys file ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.search(message)
        line = int(match.group(1)) if match and match.group(1) else max(1, len(text.splitlines()))
        message = message[: match.start()] if match else message
        if message.startswith(_NAMING_ERRORS):  # these name the table, that is the API key
            message = "this table is declared twice, or clashes with keys declared before it"
        raise InputError(f"{path}, line {line}: {message}") from None
    lines = _lines_of(text)

    def line_of(*path_keys: str) -> int | None:
        for end in range(len(path_keys), 0, -1):
            line = lines.get(path_keys[:end])
            if line is not None:
                return line
        return None

    def where(*path_keys: str) -> str:
        line = line_of(*path_keys)
        return str(path) if line is None else f"{path}, line {line}"

    for name in data:
        if name != "keys":
            # Not named: it may be an API key written without the keys. prefix.
            raise InputError(f"{where(name)}: unknown table or key; keys.toml holds only [keys.\"<api key>\"] tables")
    keys = data.get("keys")
    if not isinstance(keys, dict) or not keys:
        raise InputError(f"{where('keys')}: no API keys; add tables [keys.\"<api key>\"] with user = \"name\"")
    users: dict[str, str] = {}
    weights: dict[str, float] = {}
    weight_lines: dict[str, int | None] = {}
    for key, entry in keys.items():
        if not key.strip():
            raise InputError(f"{where('keys', key)}: an API key cannot be empty")
        if not isinstance(entry, dict):
            raise InputError(f"{where('keys', key)}: each key must be a table [keys.\"<api key>\"] with user = \"name\"")
        for field in entry:
            if field not in _FIELDS:
                raise InputError(f"{where('keys', key, field)}: unknown field; a key's table has only user and weight")
        user = entry.get("user")
        if not isinstance(user, str) or not user.strip():
            raise InputError(f"{where('keys', key, 'user')}: user must be a non-empty string (the name published in events and metrics)")
        users[key] = user
        if "weight" in entry:
            weight = entry["weight"]
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
                raise InputError(f"{where('keys', key, 'weight')}: weight must be a number > 0")
            if user in weights and weights[user] != float(weight):
                raise InputError(f"{where('keys', key, 'weight')}: user {user!r} already has weight {weights[user]:g} "
                                 f"(line {weight_lines[user]}); a user has one weight")
            weights[user] = float(weight)
            weight_lines[user] = line_of("keys", key, "weight")
    for key, user in users.items():
        if user in users:
            raise InputError(f"{where('keys', key, 'user')}: this user name is also an API key; user names are published, keys must not be")
    return KeyBook(users, weights)
