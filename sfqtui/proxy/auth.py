"""Who may call what, as Starlette's ``AuthenticationMiddleware`` backends: an API key of the keys
file for the OpenAI routes (the request's user is the key's), the events token for ``/v1/sfq``.

A request they refuse gets a 401 in OpenAI's format and never reaches a handler; one they let
through carries its user as ``request.user`` (a ``KeyUser``).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, BaseUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import Response

from sfqtui.proxy.keys import KeyBook
from sfqtui.proxy.openai_errors import unauthorized


def bearer(conn: HTTPConnection) -> str | None:
    scheme, _, credentials = conn.headers.get("authorization", "").partition(" ")
    return credentials.strip() or None if scheme.lower() == "bearer" else None


class KeyUser(BaseUser):
    """The user (the fairness principal) an API key belongs to."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.name


class ApiKeys(AuthenticationBackend):
    def __init__(self, keys: KeyBook) -> None:
        self.keys = keys

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser]:
        key = bearer(conn)
        user = self.keys.user_of(key)
        if user is None:
            raise AuthenticationError("missing API key: send Authorization: Bearer <key>" if key is None else "unknown API key")
        return AuthCredentials(["api"]), KeyUser(user)


class EventsToken(AuthenticationBackend):
    def __init__(self, token: str) -> None:
        self.token = token.encode()

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser]:
        given = bearer(conn)
        if given is None or not hmac.compare_digest(given.encode(), self.token):
            raise AuthenticationError("this proxy's state and events need its events token: Authorization: Bearer <token>")
        return AuthCredentials(["events"]), KeyUser("watcher")


def authenticated(backend: AuthenticationBackend, refused: Callable[[HTTPConnection], None] = lambda _conn: None) -> Middleware:
    """The middleware that lets through only what ``backend`` accepts; ``refused`` hears of the others."""

    def on_error(conn: HTTPConnection, exc: AuthenticationError) -> Response:
        refused(conn)
        return unauthorized(str(exc))

    return Middleware(AuthenticationMiddleware, backend=backend, on_error=on_error)
