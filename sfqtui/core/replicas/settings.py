"""How a replay models several balancer replicas (semantics §11): how many, the router,
what they share, and how the slots are split.

``ReplicaSettings()`` is one replica: today's replay, whatever the router and share say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from sfqtui.core.schedulers.registry import SYNCABLE
from sfqtui.errors import InputError

ROUTERS: tuple[str, ...] = ("hash", "random", "round-robin", "least-loaded")
SHARE_MODES: tuple[str, ...] = ("none", "sync", "global")
ShareMode = Literal["none", "sync", "global"]


@dataclass(frozen=True)
class Share:
    """What the replicas share: nothing, their charges every ``every_s`` seconds applied
    ``delay_s`` later (sync), or one scheduler and one pool of slots (global)."""

    mode: ShareMode = "none"
    every_s: float | None = None
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in SHARE_MODES:
            raise InputError(f"unknown share mode {self.mode!r}; choose none, sync:T[,D] or global")
        if self.mode == "sync":
            if self.every_s is None or not (math.isfinite(self.every_s) and self.every_s > 0):
                raise InputError("share sync:T needs a period T > 0 seconds")
            if not (math.isfinite(self.delay_s) and 0 <= self.delay_s < self.every_s):
                raise InputError("share sync:T,D needs a delay 0 <= D < T seconds: each exchange lands before the next is taken")
        elif self.every_s is not None or self.delay_s:
            raise InputError(f"share {self.mode} takes no period or delay")

    @classmethod
    def parse(cls, text: str) -> Share:
        """``none``, ``global``, ``sync:T`` or ``sync:T,D`` (seconds); InputError otherwise."""
        spec = text.strip()
        if spec == "none":
            return cls("none")
        if spec == "global":
            return cls("global")
        mode, _, numbers = spec.partition(":")
        if mode != "sync" or not numbers:
            raise InputError(f"bad --share {text!r}: use none, global, sync:T or sync:T,D (T, D in seconds)")
        parts = numbers.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:  # float() of something that is not a number
            raise InputError(f"bad --share {text!r}: T and D must be numbers of seconds") from None
        if len(values) > 2:
            raise InputError(f"bad --share {text!r}: sync takes a period and at most one delay")
        return cls("sync", values[0], values[1] if len(values) == 2 else 0.0)

    def __str__(self) -> str:
        if self.mode != "sync":
            return self.mode
        return f"sync:{_seconds(self.every_s)}" + (f",{_seconds(self.delay_s)}" if self.delay_s else "")

    @property
    def splits_slots(self) -> bool:
        """Each replica owns its own slots (none, sync); under global they are one pool."""
        return self.mode != "global"


def _seconds(x: float | None) -> str:
    """A number of seconds as it parses back exactly: 5, 0.5, 0.1."""
    assert x is not None
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


@dataclass(frozen=True)
class ReplicaSettings:
    count: int = 1
    router: str = "hash"
    share: Share = Share()
    seed: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise InputError(f"--replicas must be >= 1, not {self.count}")
        if self.router not in ROUTERS:
            raise InputError(f"unknown router {self.router!r}; choose from {', '.join(ROUTERS)}")

    @property
    def replicated(self) -> bool:
        """More than one replica: anything else is today's one-scheduler replay."""
        return self.count > 1

    def slots(self, total: int) -> list[int]:
        """Each replica's own slots out of ``total``: C // K, the first C % K one more (§11)."""
        count = self.count
        return [total // count + (1 if k < total % count else 0) for k in range(count)]

    def check(self, total_slots: int, scheduler: str, meters_and_v: bool) -> None:
        """InputError for settings that make no sense with these slots and this scheduler."""
        if not self.replicated:
            return
        if self.share.splits_slots and total_slots < self.count:
            raise InputError(f"--slots {total_slots} is fewer than --replicas {self.count}: under share {self.share.mode} "
                             "each replica owns at least one slot of its own")
        if self.share.mode == "sync" and not meters_and_v:
            raise InputError(f"share sync exchanges meters and needs a scheduler with meters and v ({', '.join(SYNCABLE)}); "
                             f"{scheduler} replicates under share none or global")

    def describe(self) -> str:
        """In words, for titles and summaries: '4 replicas, hash, share none'."""
        if not self.replicated:
            return "1 replica"
        seed = f" (seed {self.seed})" if self.router == "random" else ""
        return f"{self.count} replicas, {self.router}{seed}, share {self.share}"

    def metadata(self, total_slots: int) -> dict[str, object]:
        """What a log records about its replicas (semantics §11)."""
        share = self.share
        return {
            "count": self.count,
            "router": self.router,
            "seed": self.seed,
            "share": str(share),
            "share_mode": share.mode,
            "sync_every_s": share.every_s,
            "sync_delay_s": share.delay_s if share.mode == "sync" else None,
            "slots": self.slots(total_slots) if share.splits_slots else None,
        }

    @classmethod
    def from_metadata(cls, recorded: object) -> ReplicaSettings:
        """The settings a log's metadata records (one replica when it records none)."""
        if not isinstance(recorded, dict):
            return cls()
        return cls(int(recorded["count"]), str(recorded["router"]), Share.parse(str(recorded["share"])), int(recorded.get("seed", 0)))


ONE_REPLICA = ReplicaSettings()
