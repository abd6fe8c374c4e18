"""What a client gets for an upstream failure: an error that keeps its meaning, so that a client retries exactly
what is worth retrying.

The openai client (like most) retries 408, 409, 429 and every 5xx, and nothing else. So:

- the upstream refused the request (4xx): the same status and the upstream's message — a 400 stays a 400 and is
  not retried; except 401, 403 and 407, which say the *server's* credentials for the upstream are wrong (nothing
  the client sent): 502;
- 429: 429, with the upstream's ``Retry-After`` passed on (also on a 503);
- the upstream failed (5xx): 503 and 504 as they are, any other 5xx a 502;
- no connection could be made: 503 (the engine is down or still loading: worth retrying later);
- no byte within ``--upstream-timeout``: 504; a broken connection or a reply that is not what the protocol says: 502.

After a streamed reply began (a 200 already sent), the failure is the stream's last event, ``{"error": {...}}``,
whose ``code`` is the failure's kind (:data:`~.upstream.FAILURE_KINDS`). Messages are scrubbed of the upstream's
credentials where the error is raised (:meth:`~.upstream.UpstreamError.scrubbed`).
"""

from __future__ import annotations

import re

from starlette.responses import JSONResponse

from .protocol import APIError
from .upstream import UpstreamError

__all__ = ["client_status", "retry_after", "upstream_api_error", "upstream_error_event", "upstream_error_response"]

_NOT_THE_CLIENTS = frozenset({401, 403, 407})  # the upstream refused the server's own credentials
_KEPT_5XX = frozenset({503, 504})
_BY_KIND = {"upstream_unreachable": 503, "upstream_timeout": 504}
_TYPES = {404: "not_found_error", 429: "rate_limit_error"}
_RETRY_AFTER = re.compile(r"[ -~]{1,64}")  # seconds or an HTTP date: printable ASCII, nothing a header cannot hold


def client_status(err: UpstreamError) -> int:
    """The HTTP status a client gets for ``err`` (see the module docstring)."""
    status = err.status
    if err.kind == "upstream_status" and status is not None:
        if 400 <= status < 500 and status not in _NOT_THE_CLIENTS:
            return status
        if status in _KEPT_5XX:
            return status
        return 502
    return _BY_KIND.get(err.kind, 502)


def upstream_api_error(err: UpstreamError) -> APIError:
    """``err`` in OpenAI's error format, with the status a client gets for it."""
    status = client_status(err)
    kind = _TYPES.get(status, "invalid_request_error") if status < 500 else "upstream_error"
    return APIError(status, err.message, code=err.kind, type=kind)


def retry_after(err: UpstreamError, status: int) -> dict[str, str] | None:
    """The upstream's ``Retry-After``, passed on with a 429 or a 503 (where it is a header value at all)."""
    retry = err.retry_after
    keep = retry is not None and status in (429, 503) and _RETRY_AFTER.fullmatch(retry.strip())
    return {"Retry-After": retry.strip()} if keep and retry is not None else None


def upstream_error_response(err: UpstreamError) -> JSONResponse:
    """The HTTP answer for a failure before any byte of the reply was sent (``Retry-After`` passed on)."""
    api = upstream_api_error(err)
    return JSONResponse(api.body(), status_code=api.status, headers=retry_after(err, api.status))


def upstream_error_event(err: UpstreamError) -> dict[str, object]:
    """The last event of a stream the upstream broke off: OpenAI's error object, ``code`` naming the kind."""
    return {"error": {"message": err.message, "type": "upstream_error", "param": None, "code": err.kind}}
