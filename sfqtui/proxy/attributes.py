"""A lone proxy's requests' policy attributes (semantics §15): what a request says of itself,
kept from its arrival until it leaves the queue, for a scheduler other than SFQ."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from sfqtui.core.schedulers.base import User
from sfqtui.core.schedulers.policy import DEFAULT_CLASS, Flow, RequestAttributes

PRIORITY_HEADER = "x-sfqtui-priority"
FLOW_HEADER = "x-gateway-inference-fairness-id"  # llm-d's fairness id
CLASS_HEADER = "x-sfqtui-class"


class RequestPolicy(NamedTuple):
    """What a request says of itself: its priority (None: 0, as unset), flow (None: its user's) and class (None: the default);
    None where it said nothing, so that a recording keeps nulls there (semantics §15)."""

    priority: int | None = None
    flow: str | None = None
    policy_class: str | None = None


NO_POLICY = RequestPolicy()


def request_policy(headers: Mapping[str, str], body: Mapping[str, Any]) -> RequestPolicy:
    """The body's integer ``priority`` (LiteLLM's request parameter) or the priority header, the
    flow header and the class header; a priority that is not an integer is ignored (as unset: priority 0)."""
    priority = body.get("priority", headers.get(PRIORITY_HEADER))
    try:
        level = int(priority) if priority is not None and not isinstance(priority, bool) and float(priority).is_integer() else None
    except (TypeError, ValueError):
        level = None
    return RequestPolicy(level, headers.get(FLOW_HEADER) or None, headers.get(CLASS_HEADER) or None)


class LiveAttributes(RequestAttributes):
    """The attributes of the requests in the queue, by request number; the dispatcher adds a
    request's before it arrives at the scheduler and forgets them once it has left the queue."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[RequestPolicy, float, int]] = {}  # req -> (policy, arrival t, input tokens)

    def add(self, req: int, policy: RequestPolicy, t: float, input_tokens: int) -> None:
        self.rows[req] = (policy, t, input_tokens)

    def forget(self, req: int) -> None:
        self.rows.pop(req, None)

    def priority(self, req: int) -> int:
        return self.rows[req][0].priority or 0

    def flow(self, req: int, user: User) -> Flow:
        return self.rows[req][0].flow or user

    def policy_class(self, req: int) -> str:
        return self.rows[req][0].policy_class or DEFAULT_CLASS

    def tokens(self, req: int) -> float | None:
        return float(self.rows[req][2])

    def arrival(self, req: int) -> float | None:
        return self.rows[req][1]
