"""The store replicas share one SFQ through (semantics §12): Redis or Valkey, 6.2's commands only.

Every change of state is one cached Lua script (``scripts/*.lua``, each loaded with
``scripts/lib.lua`` in front of it, run by EVALSHA and loaded again on NOSCRIPT), so two
replicas never decide on stale state. ``Store`` (``client.py``) runs them.

Keys, under the prefix ``sfqtui:`` in the database the URL names:

- ``run`` (hash): the group's run: ``id``, ``started`` (Unix time), ``seq`` (the next
  event's), ``t`` (the last event's), ``v``, ``max_meter``, ``inflight``, ``slots``,
  ``ring``, ``settings`` (JSON: slots, ring, estimator; every replica must bring the
  same), the estimator's parameters as ``est_<name>``, ``next_replica``.
- ``meter``, ``weight``, ``busy`` (hashes): user -> S_i, w_i, requests running.
- ``backlog`` (sorted set): backlogged users scored by S_i (equal scores in byte order:
  the tie rule).
- ``q:<user>`` (list): the user's queued request ids, oldest first.
- ``req:<request id>`` (hash): a queued or running request: user (and as JSON), replica,
  weight, input tokens, cap, scope key, stage, cost.
- ``rq:<replica>``, ``rr:<replica>`` (sets): the replica's queued and running request ids.
- ``rep:<replica>`` (hash): ``incarnation`` (the process), ``address``, ``held`` (slots
  held by requests it ran on its own while the store was away).
- ``addr`` (hash): replica address (host and listen address) -> replica number.
- ``replicas`` (sorted set): live replicas, scored by when their lease ends (store time).
- ``est:<scope key>`` (hash), ``estw:<scope key>`` (list): the estimator's ratio for a
  scope key (sums and value) and the window's (output, cap) pairs.
- ``events`` (stream): the §7 events, entry id ``<seq>-1``, fields ``e`` (the event's
  JSON) and ``t``; a dispatch also ``to`` (its replica), ``r`` (request id), ``c`` (cost)
  and ``u`` (user); trimmed to about ``--ring`` entries.

Floats are stored as text written with ``%.17g`` (which reads back as the same double) and
come back as text: a Lua number in a reply would be truncated to an integer. No API key is
ever sent to the store: requests are named by the proxy's own ids, users by their names.
"""
