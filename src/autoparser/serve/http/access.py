"""The outermost ASGI middleware: every request gets a request id, is timed and counted (:mod:`.metrics`), logged in
one access line, and its reply is scrubbed of the upstream's secrets (:class:`~.security.Scrubber`).

The request id is the client's ``X-Request-Id`` where it sent one (kept to letters, digits and ``._:-``, at most
128 characters: it is echoed in a header and a log line), else a new one; it comes back as ``X-Request-Id`` on every
reply and is in the access log line and in a 500's message.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..ops.metrics import Metrics, observe
from .security import Scrubber

__all__ = ["REQUEST_ID_HEADER", "Access", "body_sender", "request_id", "request_id_of"]

REQUEST_ID_HEADER = "x-request-id"
MAX_REQUEST_ID = 128
_SCOPE_KEY = "autoparser.request_id"
_SEND_KEY = "autoparser.send"  # Access's own send, for body_sender
_UNSAFE = re.compile(rb"[^A-Za-z0-9._:\-]")
_log = logging.getLogger("autoparser.serve.http.access")


def request_id(sent: bytes | None) -> str:
    """The id for a request: the client's, sanitised and bounded, or a new one where nothing usable is left."""
    if sent:
        kept = _UNSAFE.sub(b"", sent[: MAX_REQUEST_ID * 4])[:MAX_REQUEST_ID]
        if kept:
            return kept.decode("ascii")
    return uuid.uuid4().hex


def request_id_of(scope: Scope) -> str:
    """The request id :class:`Access` gave this request ("-" outside it)."""
    found = scope.get(_SCOPE_KEY)
    return found if isinstance(found, str) else "-"


def body_sender(scope: Scope, send: Send) -> Send:
    """What a streamed reply sends its body's parts through once its response has started: :class:`Access`'s own
    ``send``, where it runs, rather than ``send`` as the app got it. What wraps ``send`` between the two looks at
    the response's start only (Starlette's exception middleware and routing note that it started, CORS adds its
    headers to it), and the start went through them; a streamed reply sends once per token, and would pass every
    wrapper each time. Elsewhere (no :class:`Access`), ``send``."""
    found = scope.get(_SEND_KEY)
    return found if found is not None else send


def _error_kind(status: int, body: bytes) -> str:
    """The OpenAI error ``type`` of an error reply, else ``http_<status>``."""
    try:
        error = json.loads(body).get("error")
        kind = error.get("type") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        kind = None
    return kind if isinstance(kind, str) and kind else f"http_{status}"


class Access:
    """Request id, timing, counting, the access log line, and the reply scrubbed of secrets."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, scrubber: Scrubber | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.scrubber = scrubber or Scrubber()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent_id = next((value for name, value in scope["headers"] if name.lower() == b"x-request-id"), None)
        rid = scope[_SCOPE_KEY] = request_id(sent_id)
        seen = observe(scope, self.metrics)
        metrics, scrubber = self.metrics, self.scrubber
        state: dict[str, Any] = {"status": 0, "events": 0, "stream": False, "error": b""}
        held: list[Message] = []  # the response start, held until the first body where bodies are scrubbed

        async def relay(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                state["status"] = message["status"]
                headers = [*message.get("headers", ()), (b"x-request-id", rid.encode())]
                state["stream"] = any(
                    n.lower() == b"content-type" and v.startswith(b"text/event-stream") for n, v in headers
                )
                message = {**message, "headers": headers}
                if scrubber:
                    held.append(message)
                    return
            elif kind == "http.response.body":
                body = message.get("body", b"")
                if scrubber and body:
                    message = self._scrubbed(message, held)
                    body = message["body"]
                if held:
                    await send(held.pop())
                if state["stream"]:
                    state["events"] += 1
                    if state["events"] == 2:  # the first event after the role chunk
                        metrics.first_token.observe(time.perf_counter() - seen.start)
                if state["status"] >= 400 and len(state["error"]) < 8192:
                    state["error"] += body
            await send(message)

        scope[_SEND_KEY] = relay
        metrics.in_flight.inc()
        try:
            await self.app(scope, receive, relay)
        except BaseException:
            if not state["status"]:
                state["status"] = 500
                state["error"] = b'{"error": {"type": "server_error"}}'
            raise
        finally:
            metrics.in_flight.dec()
            elapsed = time.perf_counter() - seen.start
            status = state["status"] or 499  # the client went away before any reply
            metrics.requests.labels(seen.endpoint, str(status)).inc()
            metrics.latency.labels(seen.endpoint).observe(elapsed)
            if status >= 400:
                metrics.error(seen.endpoint, _error_kind(status, state["error"]))
            metrics.request_done()
            client = scope.get("client")
            _log.info(
                '%s - "%s %s" %d %.1fms request_id=%s',
                f"{client[0]}:{client[1]}" if client else "-",
                scope["method"],
                _printable(scope),
                status,
                elapsed * 1000,
                rid,
            )

    def _scrubbed(self, message: Message, held: list[Message]) -> Message:
        """``message`` with the secrets masked; a whole body held with its start gets a corrected Content-Length,
        a body in parts keeps its length (each secret masked by as many ``*``)."""
        body = message["body"]
        whole = bool(held) and not message.get("more_body", False)
        clean = self.scrubber.bytes(body, keep_length=not whole)
        if clean is body or clean == body:
            return message
        if whole:
            start = held[0]
            length = str(len(clean)).encode()
            headers = [(n, length if n.lower() == b"content-length" else v) for n, v in start["headers"]]
            held[0] = {**start, "headers": headers}
        return {**message, "body": clean}


def _printable(scope: Scope) -> str:
    """The request's path as sent (percent-encoded: no line breaks or control characters reach the log)."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else scope.get("path", "")
    return path.encode("ascii", "backslashreplace").decode()[:512]
