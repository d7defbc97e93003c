"""Errors in OpenAI's format, ``{"error": {"message", "type", "code"}}``, as responses and as stream events."""

from __future__ import annotations

import json

from starlette.responses import JSONResponse

from sfqtui.proxy.sse import frame


def _error(message: str, type: str, code: str | None) -> dict[str, object]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def error_response(status: int, message: str, type: str, code: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(_error(message, type, code), status_code=status, headers=headers)


def error_frame(message: str, type: str, code: str | None = None) -> bytes:
    """An error sent inside a stream whose 200 status is already on its way (the openai client raises it)."""
    return frame(json.dumps(_error(message, type, code)))


def unauthorized(message: str) -> JSONResponse:
    return error_response(401, message, "invalid_request_error", "invalid_api_key", {"WWW-Authenticate": "Bearer"})


def bad_request(message: str) -> JSONResponse:
    return error_response(400, message, "invalid_request_error")


SHUTTING_DOWN = ("the proxy is shutting down; retry on another instance or later", "server_error", "proxy_shutting_down")


def shutting_down() -> JSONResponse:
    return error_response(503, *SHUTTING_DOWN)
