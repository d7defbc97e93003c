"""Starting a proxy from its settings: what needs the network is checked, the socket bound, and the server run."""

from __future__ import annotations

import dataclasses
import logging
import socket
from collections.abc import Callable

from sfqtui.core.numbers import count, counted
from sfqtui.proxy.settings import ProxySettings


def launch(settings: ProxySettings, say: Callable[[str], None]) -> None:
    """Check what needs the network (the engines' metrics for ``--limit-from metrics``, a group's
    store), listen, ``say`` where, and serve until a signal stops the proxy."""
    from sfqtui.proxy.server import ProxyServer, listen_socket

    if settings.limits is not None and settings.limit_from == "metrics":
        from sfqtui.proxy.limits import check_metrics

        check_metrics(settings.bases)
    host, port = settings.listen
    sock = listen_socket(host, port)
    port = sock.getsockname()[1]
    group = ""
    state_url = settings.state_url
    if state_url is not None:
        from sfqtui.proxy.group import check_store, group_settings, redacted

        check_store(state_url, settings.store_timeout_s,
                    group_settings(settings.slots, settings.ring_size, settings.estimator, None if settings.limits is None else settings.limits.maximum))
        settings = dataclasses.replace(settings, replica_name=f"{socket.gethostname()}/{host}:{port}")
        group = f"; one SFQ with the group at {redacted(state_url)}"
    server = ProxyServer(settings)
    logging.basicConfig(level=logging.WARNING, format="sfqtui proxy: %(message)s")
    logging.getLogger("sfqtui.proxy").setLevel(logging.INFO)
    shown_host = f"[{host}]" if ":" in host else host
    slots = counted(settings.slots, "slot") if settings.limits is None else f"slots auto (starting at {count(settings.slots)})"
    watchers = "need the token" if settings.events_token else "are open to anyone who can connect"
    say(f"sfqtui proxy: listening on http://{shown_host}:{port} ({counted(len(settings.keys.users), 'user')}, {slots}, "
        f"{counted(len(settings.upstreams), 'upstream')}; events {watchers}{group})")
    server.run(sockets=[sock])
