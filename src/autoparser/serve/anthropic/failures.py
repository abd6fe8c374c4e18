"""Upstream failures in Anthropic's shape: the status a chat client gets for the same failure (:mod:`..failures`:
an upstream 4xx stays that 4xx, 429 and 503 keep their ``Retry-After``, unreachable is 503, a timeout 504, any
other 5xx 502), with Anthropic's type for it — ``overloaded_error`` for 503 (Anthropic's own overload is a 529; the
engine's 503 is kept, which proxies understand and every client retries), ``timeout_error`` for 504,
``rate_limit_error`` for 429, ``api_error`` otherwise.

After a streamed reply began, the failure is the stream's ``event: error``, as Anthropic ends a stream that failed.
"""

from __future__ import annotations

import json

from starlette.responses import JSONResponse

from ..failures import client_status, retry_after
from ..upstream import UpstreamError
from .errors import error_body

__all__ = ["upstream_error_event", "upstream_error_response"]


def upstream_error_response(err: UpstreamError) -> JSONResponse:
    """The HTTP answer for a failure before any byte of the reply was sent."""
    status = client_status(err)
    return JSONResponse(error_body(status, err.message), status_code=status, headers=retry_after(err, status))


def upstream_error_event(err: UpstreamError) -> bytes:
    """The last event of a stream the upstream broke off."""
    body = json.dumps(error_body(client_status(err), err.message), ensure_ascii=False, separators=(",", ":"))
    return b"event: error\ndata: " + body.encode() + b"\n\n"
