"""Opening a live proxy's event stream, what a run of it holds besides its events, and the state a new window of it starts from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sfqtui.core.analysis.audit import Violation
from sfqtui.core.log.timeline import CheckpointBuilder, State
from sfqtui.live.bound import Bound
from sfqtui.live.run_logs import RunLogs
from sfqtui.live.source import WINDOW, LiveSource
from sfqtui.live.stream import RunStarted, Status, proxy_base
from sfqtui.protocol import ProxyState, StateSnapshot


@dataclass(frozen=True)
class LiveOpening:
    """A proxy's base URL to attach to (semantics §8), or several (replicas of one group,
    followed one at a time), and where to record the stream (one log per proxy run:
    ``recording``, which says afterwards what was saved)."""

    url: str | tuple[str, ...]
    token: str | None = None
    record: Path | None = None
    window: int = WINDOW
    recording: RunLogs | None = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        if self.record is not None:
            object.__setattr__(self, "recording", RunLogs(self.record, ", ".join(self.urls)))

    @property
    def urls(self) -> list[str]:
        return [proxy_base(url) for url in ((self.url,) if isinstance(self.url, str) else self.url)]

    @property
    def title(self) -> str:
        urls = self.urls
        return f"live: {urls[0]}" + (f" (+{len(urls) - 1} more)" if len(urls) > 1 else "")

    can_rerun = False
    is_log = False
    is_live = True
    scheduler = "sfq"  # until the proxy's state says otherwise

    def source(self) -> LiveSource:
        return LiveSource(self.urls, self.token, self.recording, self.window)


@dataclass(eq=False)
class LiveState:
    """What only a run of a live stream has: its connection, the proxy run its events belong
    to, whether its cursor follows the newest event, and the stream's audit so far."""

    link: Status | None = None  # the connection: the URL followed, why none is, the next attempt
    proxy_run: RunStarted | None = None  # the proxy run the events belong to
    new_run_since: float | None = None  # when the proxy run followed started, once the proxy restarted while attached
    ended_at: float | None = None  # an earlier proxy run: ended by then (the next one's start)
    bound: Bound | None = None  # a run of a group: whether the group's bound holds, as last heard
    limits: dict[str, int] | None = None  # a proxy with --slots auto: each upstream's limit, as last heard
    following: bool = True  # the cursor follows the newest event
    violations: list[Violation] = field(default_factory=list)  # from the stream's audit, by seq

    @property
    def connection(self) -> str | None:
        """The connection's state (sfqtui.live.stream.STATES, or "closed"), None before the first word of it."""
        return self.link.state if self.link is not None else None


def seed_from_proxy(state: ProxyState | StateSnapshot, users: list[str]) -> State:
    """The state before a window that starts after a gap, from the proxy's /v1/sfq/state (or a recording's snapshot of it):
    each user's meter, queued and in flight, and v (``users``: names by code). What was
    charged before is unknown, so shares count from here."""
    seed = State()
    seed.grow(len(users))
    seed.v = float(state.get("v") or 0.0)
    codes = {name: code for code, name in enumerate(users)}
    for entry in state.get("users", []):
        code = codes.get(entry["user"])
        if code is None:
            continue
        meter = entry.get("meter")
        if meter is not None:
            seed.value[code] = float(meter)
        seed.queued[code] = int(entry.get("queued", 0))
        seed.inflight_of[code] = int(entry.get("inflight", 0))
    seed.queued_total = sum(seed.queued)
    seed.inflight = sum(seed.inflight_of)
    return seed


def snapshot_window(metadata: dict[str, Any], builder: CheckpointBuilder) -> tuple[int, State, list[str], list[float]] | None:
    """A saved log that starts from a snapshot of a proxy's state (docs/semantics.md §7):
    the window it is shown in (first seq, the state before it, its users by code and their
    weights, as the log's source codes them), with ``builder`` started from that state;
    None for a log that starts at seq 0."""
    snapshot = metadata.get("snapshot")
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("seq"), int):
        return None
    users = list(dict.fromkeys(str(u["user"]) for u in snapshot.get("users", [])))
    weight = {str(u["user"]): float(u.get("weight") or 1.0) for u in snapshot.get("users", [])}
    weights = [weight[name] for name in users]
    builder.add_users(weights)
    seed = seed_from_proxy(cast("StateSnapshot", snapshot), users)  # as the log's metadata says (semantics §7)
    return snapshot["seq"], builder.new_window(seed), users, weights
