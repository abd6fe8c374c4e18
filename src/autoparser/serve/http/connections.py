"""Timeouts on client connections: a client must send a request's headers within ``header_timeout`` seconds (from
connecting, or from the previous reply on a kept-alive connection), and the bytes of its body with no pause longer
than ``read_timeout``; otherwise it gets a 408 and the connection is closed (closed without a word where no byte of
a request came).

uvicorn has neither (its ``timeout_keep_alive`` only closes a connection idle *between* requests, and any byte
cancels it): a client that opens a connection and trickles its headers, or declares a ``Content-Length`` it never
sends, holds a connection and a task forever. :func:`timed_protocol` makes one of uvicorn's HTTP protocols with
both timers; :func:`~autoparser.serve.serve` runs with it.

The protocol is uvicorn's httptools one (llhttp, the C parser Node.js uses) where ``httptools`` is installed, as the
``serve`` extra installs it, else its pure-Python h11 one: the same ASGI behaviour, but framing each streamed event
costs a few microseconds instead of some tens (bench/serve_bench.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT", "DEFAULT_READ_TIMEOUT", "HTTP_IMPLEMENTATIONS", "timed_protocol"]

HTTP_IMPLEMENTATIONS = ("auto", "httptools", "h11")

DEFAULT_HEADER_TIMEOUT = 10.0  # seconds to send a request's headers, from connecting or from the previous reply
DEFAULT_READ_TIMEOUT = 30.0  # the longest pause in sending a request's body


def _timeout_reply(message: str) -> bytes:
    body = json.dumps(
        {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "request_timeout"}}
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class _Timers:
    """A header timer (armed when a connection opens and after each reply) and a body timer (re-armed by every byte
    while a request's body is incomplete), mixed into one of uvicorn's HTTP protocols (both keep the request in
    ``self.cycle`` and call :meth:`on_response_complete` after each reply)."""

    # what the protocol it is mixed into has (uvicorn's H11Protocol and HttpToolsProtocol)
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._reading_body = False
        self._begun = False  # bytes of a next request came (an idle kept-alive connection is closed without a 408)

    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._begun = False
        if seconds > 0:
            self._timer = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, self._headers_late)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        self._begun = True
        super().data_received(data)
        if self.cycle is not cycle or self._reading_body:  # a request began, or more of its body came
            self._watch_body()

    def _watch_body(self) -> None:
        cycle = self.cycle
        self._reading_body = cycle is not None and cycle.more_body and not cycle.response_complete
        if self._reading_body:
            self._arm(self.read_timeout, self._body_late)
        else:
            self._disarm()

    def on_response_complete(self) -> None:
        self._reading_body = False
        super().on_response_complete()
        if self.transport.is_closing():
            self._disarm()
        elif self.cycle is None or self.cycle.response_complete:
            self._arm(self.header_timeout, self._headers_late)  # waiting for the next request's headers
        else:
            self._watch_body()  # a pipelined request began

    def _close_with_408(self, message: str, answer: bool) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if answer:
            self.transport.write(_timeout_reply(message))
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app's receive() says the client is gone
            cycle.message_event.set()
        self.transport.close()

    def _headers_late(self) -> None:
        self._close_with_408(f"the request's headers did not come within {self.header_timeout:g} s", self._begun)

    def _body_late(self) -> None:
        cycle = self.cycle
        answer = cycle is not None and not cycle.response_started
        self._close_with_408(f"the request's body stopped coming for {self.read_timeout:g} s", answer)


def timed_protocol(
    header_timeout: float = DEFAULT_HEADER_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT, http: str = "auto"
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class (its ``http`` option) with these timeouts in seconds (0: none). ``http``:
    ``httptools``, ``h11``, or ``auto`` (httptools where it is installed)."""
    if http not in HTTP_IMPLEMENTATIONS:
        raise ValueError(f"http must be one of {', '.join(HTTP_IMPLEMENTATIONS)}, got {http!r}")
    base: type[asyncio.Protocol] = H11Protocol
    if http != "h11":
        try:
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        except ImportError:
            if http == "httptools":
                raise ValueError("http=httptools needs the httptools package (pip install httptools)") from None
        else:
            base = HttpToolsProtocol
    return type(
        f"Timed{base.__name__}",
        (_Timers, base),
        {"header_timeout": header_timeout, "read_timeout": read_timeout},
    )
