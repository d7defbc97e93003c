"""What every importer is told: who the users are, what max_tokens is, how time reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from sfqtui.errors import InputError

Assign = Literal["zipf", "uniform", "round-robin"]
ASSIGNS: tuple[str, ...] = ("zipf", "uniform", "round-robin")
TIME_UNITS: tuple[str, ...] = ("s", "ms", "us", "datetime")
MAPPABLE = ("arrival_s", "request_id", "user", "input_tokens", "output_tokens", "max_tokens", "model", "cost", "service_s", "weight",
            "priority", "flow", "class", "deadline_s")
POLICY_FROM = ("priority", "flow", "class")  # what --policy-from maps from a gateway log (semantics §15)


@dataclass(frozen=True)
class MaxTokens:
    """none: no max_tokens column; fixed: a cap of N (raised to the output where it was longer);
    bucket: the output rounded up to a multiple of N; pow2: up to a power of two (at least N)."""

    kind: Literal["none", "fixed", "bucket", "pow2"] = "none"
    n: int = 0

    @classmethod
    def parse(cls, text: str) -> MaxTokens:
        match = re.fullmatch(r"(none)|(fixed|bucket|pow2):(\d+)|(pow2)", text.strip())
        if not match:
            raise InputError(f"--max-tokens {text!r}: use none, fixed:N, bucket:N or pow2:N (N > 0)")
        if match.group(1):
            return cls()
        if match.group(4):
            return cls("pow2", 1)
        n = int(match.group(3))
        if n <= 0:
            raise InputError(f"--max-tokens {text!r}: N must be > 0")
        return cls(match.group(2), n)  # type: ignore[arg-type]  # the pattern admits only fixed, bucket or pow2 here


@dataclass(frozen=True)
class Users:
    """Users from a column of the source, or assigned synthetically (deterministic per seed)."""

    column: str | None = None
    count: int | None = None
    assign: Assign = "zipf"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.column is not None and self.count is not None:
            raise InputError("give --user-from or --users, not both")
        if self.count is not None and self.count < 1:
            raise InputError("--users must be >= 1")
        if self.assign not in ASSIGNS:
            raise InputError(f"--assign must be one of {', '.join(ASSIGNS)}")


@dataclass(frozen=True)
class ImportOptions:
    users: Users = field(default_factory=Users)
    max_tokens: MaxTokens = field(default_factory=MaxTokens)
    keep_failed: bool = False
    jitter_s: float = 0.0
    seed: int = 0
    mapping: dict[str, str] = field(default_factory=dict)
    time_unit: str = "s"
    policy_from: dict[str, str] = field(default_factory=dict)  # gateway logs: trace column -> the field or header holding it


def parse_policy_from(text: str | None) -> dict[str, str]:
    """``priority=KEY,flow=KEY,class=KEY`` to a dict, checking the column names."""
    found: dict[str, str] = {}
    for part in (p for p in (text or "").split(",") if p.strip()):
        column, sep, key = (x.strip() for x in part.partition("="))
        if not sep or not key or column not in POLICY_FROM:
            raise InputError(f"--policy-from: {part.strip()!r} is not COLUMN=KEY with COLUMN one of {', '.join(POLICY_FROM)}")
        found[column] = key
    return found


def parse_mapping(text: str | None) -> dict[str, str]:
    """``arrival_s=COL,input_tokens=COL,...`` to a dict, checking the target names."""
    if not text:
        return {}
    mapping: dict[str, str] = {}
    for part in text.split(","):
        target, sep, source = part.partition("=")
        target, source = target.strip(), source.strip()
        if not sep or not target or not source:
            raise InputError(f"--map: {part!r} is not NAME=COLUMN")
        if target not in MAPPABLE:
            raise InputError(f"--map: {target!r} is not a trace column; map to {', '.join(MAPPABLE)}")
        mapping[target] = source
    return mapping
