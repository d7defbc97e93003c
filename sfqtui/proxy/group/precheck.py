"""Before a replica serves: the CLI's synchronous check that the store answers and that a group
already running there has these settings; and the store's URL as messages show it."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from redis.exceptions import RedisError

from sfqtui.proxy.group.wire import as_text
from sfqtui.proxy.store.keys import RUN


def redacted(url: str) -> str:
    """The store's URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username + ':' if parts.username else ''}***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def check_store(url: str, timeout_s: float, settings: str) -> None:
    """Before serving: the store answers, and a group already running there has these settings (InputError if not)."""
    import redis

    from sfqtui.errors import InputError

    client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    try:
        running = client.hget(RUN, "settings")
    except (RedisError, OSError) as exc:
        raise InputError(f"--state {redacted(url)}: the store does not answer ({type(exc).__name__}: {exc})") from None
    finally:
        client.close()
    if running is not None and as_text(running) != settings:
        raise InputError(f"--state {redacted(url)}: the group there runs with other settings ({as_text(running)}); "
                         "every replica needs the same --slots, --ring and estimator options")
