"""The scripts as a server runs them, put together from the Lua files (their one source):
``scripts/lib.lua`` and ``scripts/members.lua``, then each script's body, which starts its call
with ``F.begin(KEYS)``.

- ``library()``: one Functions library (Redis 7 and later, Valkey) registering every script as a
  function, loaded once per server; its name and its functions' carry a digest of the files, so
  replicas of another version on the same server keep theirs.
- ``script(name)``: one script for EVALSHA (Redis 6.2), the shared code in front of it (but for the
  per-request ``batch``, which goes without ``members.lua``'s definitions).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files

SCRIPTS = ("batch", "renew", "join", "leave", "state")


def _source(part: str) -> str:
    return (files("sfqtui.proxy.store") / "scripts" / f"{part}.lua").read_text()


@cache
def version() -> str:
    """A digest of the Lua files: the library's name and its functions' say which code they run."""
    digest = hashlib.sha1(usedforsecurity=False)
    for part in ("lib", "members", *SCRIPTS):
        digest.update(_source(part).encode() + b"\0")
    return digest.hexdigest()[:12]


def function_name(name: str) -> str:
    return f"sfqtui_{version()}_{name}"


@cache
def library() -> str:
    functions = [f"redis.register_function('{function_name(name)}', function(KEYS, ARGV)\nF.begin(KEYS)\n{_source(name)}\nend)"
                 for name in SCRIPTS]
    return "\n".join([f"#!lua name=sfqtui_{version()}", _source("lib"), _source("members"), *functions])


def script(name: str) -> str:
    shared = ["lib"] if name == "batch" else ["lib", "members"]
    return "\n".join([*(_source(part) for part in shared), "F.begin(KEYS)", _source(name)])
