"""Opening a live proxy's event stream, what a run of it holds besides its events, and the state a new window of it starts from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sfqtui.attach.bound import Bound
from sfqtui.attach.run_logs import RunLogs
from sfqtui.attach.source import WINDOW, LiveSource
from sfqtui.attach.stream import RunStarted, Status, proxy_base
from sfqtui.core.analysis.audit import Violation
from sfqtui.core.log.timeline import CheckpointBuilder, State
from sfqtui.protocol import ProxyState, StateSnapshot
from sfqtui.trace.notices import WindowStarts


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
    scheduler = "sfq"  # until the proxy's state says otherwise

    def source(self) -> LiveSource:
        return LiveSource(self.urls, self.token, self.recording, self.window)

    def run_state(self) -> LiveState:
        return LiveState()


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
        """The connection's state (sfqtui.attach.stream.STATES, or "closed"), None before the first word of it."""
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


def start_window(notice: WindowStarts, builder: CheckpointBuilder) -> tuple[int, State, list[str], list[float]]:
    """The window a source starts (a stream's next one, or the one a log recorded from a proxy's
    state is shown in): its first seq, the state before it, its new users by code and their
    weights, as the proxy's state names them; ``builder`` goes on from that state."""
    weights = {u["user"]: float(u.get("weight") or 1.0) for u in (notice.state.get("users", []) if notice.state else [])}
    added = [weights.get(name, 1.0) for name in notice.new_users]
    builder.add_users(added)
    seed = builder.new_window(seed_from_proxy(notice.state, list(notice.users)) if notice.state else None)
    return notice.first_seq, seed, list(notice.new_users), added
