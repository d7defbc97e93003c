"""Everything a proxy is started with, checked in one place: ``ProxySettings``.

The CLI builds it from its options with ``ProxySettings.from_options`` (which parses what the
command line gives as text: ``--slots auto:8``, ``--listen HOST:PORT``, the keys file); tests
build it directly. Either way a bad value is an ``InputError`` (one line, exit status 2)
before anything starts. What needs the network (the store of ``--state``, the engines'
metrics of ``--limit-from metrics``) is checked when the proxy starts (``launch``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sfqtui.core.engines.prompt_blocks import DEFAULT_BLOCK_TOKENS
from sfqtui.core.limits import LimitSettings
from sfqtui.core.limits.slots import parse_slots
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.core.schedulers.registry import REGISTRY, check_schedulers
from sfqtui.errors import InputError
from sfqtui.paths import check_output
from sfqtui.proxy.keys import KeyBook, load_keys
from sfqtui.proxy.placement import DEFAULT_INDEX_BLOCKS, PLACEMENTS
from sfqtui.proxy.urls import base_url

LIMIT_SOURCES = ("auto", "metrics", "latency")  # --limit-from
# What a lone proxy can run: a scheduler that needs no quantum and charges at dispatch (DRR's
# quantum is a trace's largest cost; VTC charges the output after the fact).
PROXY_SCHEDULERS = tuple(name for name, t in REGISTRY.items() if not t.needs_quantum and t.charges == "estimate")


def parse_listen(listen: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8080`` for IPv6) -> (host, port)."""
    host, sep, port = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--listen {listen!r}: expected host:port, for example 127.0.0.1:8080")
    return host, int(port)


def check_state_url(url: str) -> None:
    """InputError unless ``url`` names a Redis database the way docs/replicas.md says
    (redis://HOST:PORT/DB, rediss://...): redis-py's own parsing, and a database that is a
    number (redis-py reads any other path as database 0, another group's)."""
    from urllib.parse import unquote, urlsplit

    from redis.connection import parse_url

    from sfqtui.proxy.group import redacted

    try:
        shown = f"--state {redacted(url)}"
    except ValueError:  # a port that is not a number
        shown = "--state"
    try:
        parse_url(url)
        parts = urlsplit(url)
    except ValueError as exc:
        raise InputError(f"{shown}: {exc}; give redis://HOST:PORT/DB or rediss://HOST:PORT/DB (docs/replicas.md)") from None
    database = unquote(parts.path).strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise InputError(f"{shown}: the database {database!r} is not a number; give redis://HOST:PORT/DB with DB a number "
                         "(each group of replicas needs its own, docs/replicas.md)")


@dataclass(frozen=True)
class ProxySettings:
    upstreams: tuple[str, ...]  # as given; ``bases`` are what requests go to
    slots: int  # with limits: the first limits' sum (the slots follow their sum after)
    keys: KeyBook
    limits: LimitSettings | None = None  # --slots auto: each upstream's limit follows it (None: fixed --slots)
    limit_from: str = "auto"  # --limit-from: auto, metrics or latency
    listen: tuple[str, int] = ("127.0.0.1", 8080)
    events_token: str | None = field(default=None, repr=False)
    ring_size: int = 100_000
    record: Path | None = None
    metrics_users: int = 20
    estimator: EstimatorParams = field(default_factory=EstimatorParams)
    upstream_timeout_s: float = 600.0
    shutdown_grace_s: float = 30.0
    keepalive_s: float = 15.0
    record_every_s: float = 10.0
    state_url: str | None = None  # a group's store (redis:// or rediss://); None: a lone proxy
    replica_name: str | None = None  # the replica's identity in the group: host and listen address
    lease_s: float = 5.0
    store_timeout_s: float = 1.0
    block_tokens: int = DEFAULT_BLOCK_TOKENS  # a prompt block of the record's prefix_blocks, in the proxy's estimated tokens
    placement: str = "room"  # --placement: room or prefix (sfqtui.proxy.placement)
    prefix_index_blocks: int = DEFAULT_INDEX_BLOCKS  # --placement prefix: blocks the index keeps per upstream
    scheduler: str = "sfq"  # a lone proxy's (semantics §15 policies included); a group shares one SFQ

    def __post_init__(self) -> None:
        check_schedulers([self.scheduler], PROXY_SCHEDULERS)
        if self.state_url is not None and self.scheduler != "sfq":
            raise InputError(f"--scheduler {self.scheduler}: a group of replicas (--state) shares one SFQ through its store; "
                             f"run {self.scheduler} on a lone proxy (without --state)")
        if not self.upstreams:
            raise InputError("give at least one --upstream URL")
        for url in self.upstreams:
            base_url(url)
        if self.slots < 1:
            raise InputError("--slots must be >= 1")
        if self.limit_from not in LIMIT_SOURCES:
            raise InputError(f"--limit-from {self.limit_from!r}: expected one of {', '.join(LIMIT_SOURCES)}")
        if self.events_token is not None and not self.events_token.strip():
            raise InputError("--events-token cannot be empty")
        if self.ring_size < 1:
            raise InputError("--ring: the ring must hold at least 1 event")
        if self.record is not None:
            check_output(self.record, "--record")
        if self.block_tokens < 1:
            raise InputError("--block-tokens must be >= 1")
        if self.placement not in PLACEMENTS:
            raise InputError(f"--placement {self.placement!r}: expected one of {', '.join(PLACEMENTS)}")
        if self.prefix_index_blocks < 1:
            raise InputError("--prefix-index-blocks must be >= 1")
        if self.metrics_users < 1:
            raise InputError("--metrics-users must be >= 1")
        if self.estimator.oracle:
            raise InputError("the proxy cannot use the oracle estimator: a live request's output is not known at dispatch")
        if not self.upstream_timeout_s > 0:
            raise InputError("--upstream-timeout must be > 0")
        if self.shutdown_grace_s < 0:
            raise InputError("--shutdown-grace must be >= 0")
        if self.state_url is not None:
            check_state_url(self.state_url)
            if not self.state_url.startswith(("redis://", "rediss://")):
                raise InputError(f"--state {self.state_url!r}: expected redis://HOST:PORT/DB or rediss://HOST:PORT/DB")
        if not self.lease_s > 0 or not self.store_timeout_s > 0:
            raise InputError("--lease and --store-timeout must be > 0")
        if self.state_url is not None and self.store_timeout_s >= self.lease_s / 2:
            raise InputError("--store-timeout must be under half of --lease, so a replica renews its lease in time")

    @property
    def bases(self) -> list[str]:
        """The upstreams' base URLs, which requests' paths go after."""
        return [base_url(url) for url in self.upstreams]

    @classmethod
    def from_options(cls, *, upstream: list[str], keys: Path, slots: str, listen: str, **options: Any) -> ProxySettings:
        """From the command line's values: ``--slots`` and ``--listen`` as text, the keys file's path;
        ``options`` are the other fields by name."""
        host, port = parse_listen(listen)
        fixed, limits = parse_slots(slots)
        # With limits, the slots start as the first limits' sum.
        pool = fixed if fixed is not None else len(upstream) * (limits or LimitSettings()).first
        # Every option is checked before the keys file is read, as every command refuses bad options before any work.
        unkeyed = cls(upstreams=tuple(upstream), slots=max(1, pool), keys=KeyBook({}, {}), limits=limits, listen=(host, port), **options)
        return dataclasses.replace(unkeyed, keys=load_keys(keys))
