"""Everything a proxy is started with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sfqtui.core.limits import LimitSettings
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.errors import InputError
from sfqtui.proxy.keys import KeyBook


@dataclass(frozen=True)
class ProxySettings:
    upstreams: tuple[str, ...]
    slots: int  # with limits: the first limits' sum (the slots follow their sum after)
    keys: KeyBook
    limits: LimitSettings | None = None  # --slots auto: each upstream's limit follows it (None: fixed --slots)
    limit_from: str = "auto"  # --limit-from: auto, metrics or latency
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

    def __post_init__(self) -> None:
        if self.estimator.oracle:
            raise InputError("the proxy cannot use the oracle estimator: a live request's output is not known at dispatch")
        if self.shutdown_grace_s < 0:
            raise InputError("--shutdown-grace must be >= 0")
        if self.state_url is not None and not self.state_url.startswith(("redis://", "rediss://")):
            raise InputError(f"--state {self.state_url!r}: expected redis://HOST:PORT/DB or rediss://HOST:PORT/DB")
        if not self.lease_s > 0 or not self.store_timeout_s > 0:
            raise InputError("--lease and --store-timeout must be > 0")
        if self.state_url is not None and self.store_timeout_s >= self.lease_s / 2:
            raise InputError("--store-timeout must be under half of --lease, so a replica renews its lease in time")
