"""The store's keys (``store/__init__.py`` says what each holds), named here only: the client
reads the run's settings and the event stream by these names, and every script gets them as its
KEYS, in ``SCRIPT_KEYS``'s order (``F.begin`` in ``scripts/lib.lua`` reads them by position)."""

from __future__ import annotations

PREFIX = "sfqtui:"
RUN = PREFIX + "run"
USERS = PREFIX + "users"
BACKLOG = PREFIX + "backlog"
REPLICAS = PREFIX + "replicas"
EVENTS = PREFIX + "events"
ADDRESSES = PREFIX + "addr"
# The families of keys named after a user, a replica or a scope key: a script appends the name.
QUEUE = PREFIX + "q:"
RUNNING = PREFIX + "rr:"
REPLICA = PREFIX + "rep:"
RATIO = PREFIX + "est:"
WINDOW = PREFIX + "estw:"
POOL = PREFIX + "pool"  # --slots auto: each upstream's limit (hash); the group's slots are their sum

SCRIPT_KEYS = (RUN, USERS, BACKLOG, REPLICAS, EVENTS, ADDRESSES, QUEUE, RUNNING, REPLICA, RATIO, WINDOW, POOL)

