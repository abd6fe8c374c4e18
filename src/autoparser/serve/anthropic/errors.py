"""Anthropic's error shape, ``{"type": "error", "error": {"type", "message"}}``, for every refusal on the Messages
paths: an Anthropic client reads ``error.type`` and ``error.message`` from it (and the server's metrics read
``error.type``, as they read OpenAI's).

The status codes are the chat endpoint's (the same failure answers the same status on both, so a client retries
the same things); only the body differs. Each status has Anthropic's type for it (:func:`error_type`).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from ..protocol import APIError

__all__ = ["PATHS", "error_body", "error_response", "error_type", "is_messages_path"]

PATHS = ("/v1/messages", "/v1/messages/count_tokens")
# Anthropic's error types by status (its API's errors page); any other 4xx is invalid_request_error, 5xx api_error
_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def is_messages_path(path: str) -> bool:
    """Whether ``path`` is the Messages API's (its errors are Anthropic's shape)."""
    return path == PATHS[0] or path.startswith(PATHS[0] + "/")


def error_type(status: int) -> str:
    """Anthropic's error type for an HTTP status."""
    return _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type(status), "message": message}}


def error_response(err: APIError, headers: dict[str, str] | None = None) -> JSONResponse:
    """``err`` (raised by the request's reading, the chat validation or the rendering) in Anthropic's shape."""
    return JSONResponse(error_body(err.status, err.message), status_code=err.status, headers=headers)
