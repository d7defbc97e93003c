"""The proxy's exceptions, in one tree, so that a caller can catch as broadly as it means to.

Our exception classes::

    ProxyError                  raised by the proxy's own code, never by a library it uses
    ├── Closing                 the proxy is draining and takes no more requests (the client gets 503)
    ├── Interrupted             a request stopped waiting before its answer was relayed
    │   ├── ClientGone          the client disconnected
    │   └── Aborted             shutdown's grace is over
    ├── UpstreamError           the upstreams could not answer: ``status`` and ``code`` are what the client gets
    ├── EventTooLong            an upstream's SSE event grew past the relay's limit without ending
    ├── GroupError              the group cannot be joined as asked (other settings, or no store at start)
    └── StoreError              a call to the group's store failed
        ├── StoreAway           the store did not answer (in time): the replica serves on its own
        └── BadReply            the store answered something no script sends (a bug, or another version's scripts)

None of them is the user's fault at the command line: that is ``sfqtui.errors.InputError``,
which the CLI turns into one line and exit status 2.
"""

from __future__ import annotations


class ProxyError(Exception):
    """Raised by the proxy's own code."""


class Closing(ProxyError):
    """The proxy is shutting down and takes no more requests."""


class Interrupted(ProxyError):
    """A request stopped waiting (for a slot, the upstream or its stream) before its answer was relayed."""


class ClientGone(Interrupted):
    """The client disconnected."""


class Aborted(Interrupted):
    """Shutdown gave up waiting for this request."""


class UpstreamError(ProxyError):
    """A request the upstreams could not answer; ``status`` is what the client gets."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class EventTooLong(ProxyError):
    """An event grew past ``WholeEvents.limit`` bytes without ending."""


class GroupError(ProxyError):
    """The group cannot be joined as asked (other settings, or no store at start)."""


class StoreError(ProxyError):
    """A call to the group's store failed."""


class StoreAway(StoreError):
    """The store did not answer (in time)."""


class BadReply(StoreError):
    """The store answered something no script sends (a bug, or not this version's scripts)."""
