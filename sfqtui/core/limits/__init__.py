"""Concurrency limits that follow an engine (``--slots auto``): pure controllers, one per upstream.

No I/O and no clock of their own: the caller passes the time and what it read, so the proxy
(``sfqtui.proxy.limits``) and a replay with the engine model run the same code.

- ``settings``: ``LimitSettings`` (start, maximum, thresholds, gradient parameters) and
  ``EngineSignals`` (an engine's running, waiting and KV use as read at a time);
- ``slots``: ``parse_slots`` (``--slots N|auto[:MAX]``) and ``SCRAPE_S``, the pace of reading engines;
- ``controller``: ``LimitController``, which keeps the engine's own queue near empty and its KV
  under a threshold from its metrics, backs off on a full queue (503), and otherwise adapts from
  latency (``gradient``).
"""

from __future__ import annotations

from sfqtui.core.limits.controller import LimitController
from sfqtui.core.limits.settings import REASONS, EngineSignals, LimitSettings, saturation

__all__ = ["REASONS", "EngineSignals", "LimitController", "LimitSettings", "saturation"]
