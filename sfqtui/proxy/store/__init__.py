"""The store replicas share one SFQ through (semantics §12): Redis 6.2 or later, or Valkey.

Every change of state is one call of a Lua script (``scripts/*.lua``, after the shared
``scripts/lib.lua`` and ``scripts/members.lua``), so two replicas never decide on stale state.
``library.py`` puts the files together: on a server with Functions (Redis 7 and later, Valkey)
as one library loaded once and run with FCALL, on Redis 6.2 as cached scripts run by EVALSHA.
``Store`` (``client.py``) runs them and reads their replies as typed values (``replies.py``,
with the binary records of ``records.py``);
``Batch`` (``batch.py``) sends a replica's arrivals, completions and cancellations of one turn
of its event loop as one call of ``scripts/batch.lua``. ``keys.py`` names the keys, which every
script gets as its KEYS.

Keys, under the prefix ``sfqtui:`` in the database the URL names (``keys.py``):

- ``run`` (hash): the group's run: ``id``, ``settings`` (JSON: slots, ring, estimator and the
  layout of these keys; every replica must bring the same), ``next_replica``, and two binary
  fields (Lua's ``struct``, so that scripts parse no number from text): ``c``, what never
  changes (slots, ring, the start time, the estimator's parameters) and ``s``, what every
  script changes (the next event's seq, in flight, the backlog's size, t, v, the largest
  meter).
- ``users`` (hash): ``m:<user>`` -> S_i (a binary double), ``w:<user>`` -> w_i (text).
- ``backlog`` (sorted set): backlogged users scored by S_i (equal scores in byte order:
  the tie rule).
- ``q:<user>`` (list): the user's queued requests, oldest first, each as the replica packed
  it (``records.pack_request``: input tokens, cap and weight as binary, then its id, replica,
  weight as text, user and scope key).
- ``rr:<replica>`` (hash): the replica's running requests, id -> the packed request.
- ``rep:<replica>`` (hash): ``incarnation`` (the process), ``address``, ``held`` (slots
  held by requests it ran on its own while the store was away).
- ``addr`` (hash): replica address (host and listen address) -> replica number.
- ``replicas`` (sorted set): live replicas, scored by when their lease ends (store time).
- ``est:<scope key>`` (string, binary): the estimator's ratio for a scope key and the sums it
  was learned from; ``estw:<scope key>`` (list): the window's (output, cap) pairs, binary.
- ``events`` (stream): the §7 events, one entry per script that made some, entry id
  ``<first seq>-<count>``, field ``e``: the events' binary records one after the other
  (``records.py``), from which each replica writes the §7 JSON its clients get (the same
  bytes on every replica) and learns the dispatches of its own requests; trimmed to about
  ``--ring`` events.
- ``pool`` (hash, ``--slots auto`` only): upstream -> its limit, as a replica last wrote it;
  the run's slots (0 in ``c``) are their sum.

No script formats a number or parses one from text where it can help it: floats go between
the replicas and the scripts as binary doubles (a Lua number in a reply would be truncated to
an integer), bit for bit; the backlog's scores, which the server keeps as numbers, are given to
it as Lua numbers, which it writes exactly (``%.17g`` on Redis 6.2, the shortest text that reads
back as the same double on Redis 7 and Valkey). No API key is ever sent to the store: requests are named by the proxy's own ids, users by their
names.
"""
