"""A replay's requests' policy attributes (semantics §15), read from the trace's columns through its window."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from sfqtui.core.requests.window import RequestWindow
from sfqtui.core.schedulers.base import User
from sfqtui.core.schedulers.policy import DEFAULT_CLASS, Flow, RequestAttributes


class WindowAttributes(RequestAttributes):
    """Request r's attributes from the chunk of the window that holds it (a scheduler only asks
    about requests that have arrived and are not complete, so their chunk is held). A column
    the trace lacks reads as the base class says; a null flow or class likewise."""

    def __init__(self, window: RequestWindow, users: Sequence[str], columns: frozenset[str], tokens: bool) -> None:
        self._window = window
        self._users = users
        self._has = columns
        self._tokens = tokens  # price Dynamo by input_tokens (the trace has them)
        # The engines' cache: the input tokens of a queued request the balancer predicts cached
        # where it would go now (set by the replay's plan when the engines model their caches).
        self.cached_of: Callable[[int], int] | None = None

    def priority(self, req: int) -> int:
        if "priority" not in self._has:
            return 0
        trace, i = self._window.row(req)
        return trace.priority[i]  # type: ignore[index]  # the trace has the column

    def flow(self, req: int, user: User) -> Flow:
        """The flow's name; a request without one is in its user's flow (named as the user is)."""
        if "flow" not in self._has:
            return user
        trace, i = self._window.row(req)
        name = trace.flow[i]  # type: ignore[index]  # the trace has the column
        return self._users[trace.user[i]] if name is None else name

    def policy_class(self, req: int) -> str:
        if "class" not in self._has:
            return DEFAULT_CLASS
        trace, i = self._window.row(req)
        return trace.policy_class[i] or DEFAULT_CLASS  # type: ignore[index]  # the trace has the column

    def deadline(self, req: int) -> float:
        if "deadline_s" not in self._has:
            return math.inf
        trace, i = self._window.row(req)
        after = trace.deadline_s[i]  # type: ignore[index]  # the trace has the column
        return math.inf if math.isnan(after) else trace.arrival_s[i] + after

    def tokens(self, req: int) -> float | None:
        if not self._tokens:
            return None
        trace, i = self._window.row(req)
        count = trace.input_tokens[i]  # type: ignore[index]  # the trace has the column
        if count < 0:
            return None
        return float(count if self.cached_of is None else count - self.cached_of(req))

    def arrival(self, req: int) -> float | None:
        trace, i = self._window.row(req)
        return trace.arrival_s[i]
