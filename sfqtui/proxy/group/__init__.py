"""A replica of a group sharing one SFQ through the store (semantics §12, ``--state``): ``Group``.

The store decides every dispatch (``sfqtui.proxy.store``); this replica holds its clients'
connections. A request is queued in the store by one script call (which also dispatches
whatever the free slots allow); the replica hears of a dispatch of its own request in that
call's reply or, when another replica's call dispatched it, from the group's event stream,
which it follows with a blocking read and serves to its own clients (``EventRing``). The
operations of one turn of the event loop share one call (``Batch``).

When the store does not answer, the replica is *suspended*: it serves its requests with a
local SFQ (``Dispatcher``) on its share of the slots, counting the slots its running
requests hold, and tells its stream clients that the global bound is suspended. It tries to
join again every lease period; joining settles what it held (queued requests that went
local leave the store's queues, requests that ended meanwhile complete), raises the meters
by what it charged on its own (never lowering one), and queues its still-waiting requests
in the store again under new ids. A request is sent upstream at most once: only its ticket
decides, whichever path dispatched it.

One module per job, each a part of ``Group`` but the first two:

- ``wire``: the store's wire format (a request as the store keeps it, the settings, the
  snapshot's reply, the event stream's entries);
- ``precheck``: the CLI's synchronous check of the store before serving;
- ``base``: what the parts share (the replica's fields, and what one part asks of another);
- ``membership``: joining, the lease, leaving;
- ``following``: following the group's event stream;
- ``suspension``: the local SFQ while the store is away;
- ``replica``: the requests, the snapshot and draining: ``Group`` itself.
"""

from __future__ import annotations

from sfqtui.proxy.group.precheck import check_store, redacted
from sfqtui.proxy.group.replica import Group
from sfqtui.proxy.group.wire import group_settings, packed

__all__ = ["Group", "check_store", "group_settings", "packed", "redacted"]
