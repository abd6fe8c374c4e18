"""Timeouts on client connections (issue 25, item 1): a client that does not finish a request's headers in time,
or stops sending a body shorter than its ``Content-Length``, gets a 408 and its connection closed — instead of
holding it forever. Normal requests, kept-alive connections included, are untouched.

The server runs with the same uvicorn protocol ``autoparser serve`` uses (:func:`timed_protocol`), with short
timeouts; each socket read has a generous timeout of its own, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app
from autoparser.serve.http.connections import timed_protocol

from .double import LoopbackServer, UpstreamDouble

QWEN = "Qwen3.5-4B"
GUARD = 20.0  # seconds a socket read may take before the test gives up (the server's timeouts are far shorter)


@pytest.fixture(scope="module", params=["httptools", "h11"])
def server(request: pytest.FixtureRequest, double: UpstreamDouble) -> Iterator[LoopbackServer]:
    """The server on either of uvicorn's HTTP implementations (``--http``), both with the timers."""
    app = create_app(ChatTemplate.load(QWEN), ServeConfig(double.url))  # type: ignore[attr-defined]
    protocol = timed_protocol(header_timeout=0.5, read_timeout=0.5, http=request.param)
    assert protocol.__name__ == {"httptools": "TimedHttpToolsProtocol", "h11": "TimedH11Protocol"}[request.param]
    with LoopbackServer(app, http=protocol) as running:
        yield running


def _connect(server: LoopbackServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=GUARD)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _request(body: bytes, length: int | None = None) -> bytes:
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body) if length is None else length}\r\n\r\n"
    )
    return head.encode() + body


def _error(reply: bytes) -> dict[str, Any]:
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), head
    return json.loads(body)["error"]


def test_headers_that_never_end_get_a_408(server: LoopbackServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
        error = _error(_read_all(sock))
    assert error["code"] == "request_timeout" and "headers" in error["message"]


def test_headers_trickled_byte_by_byte_are_cut_off(server: LoopbackServer) -> None:
    """Each byte would reset a per-read timer; the header timer counts from the connection."""
    header = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-slow: " + b"a" * 400
    sent = 0
    with _connect(server) as sock:
        try:
            for byte in header:
                sock.sendall(bytes([byte]))
                sent += 1
                time.sleep(0.01)
        except OSError:  # the server closed the connection under us
            pass
        reply = _read_all(sock)
    assert sent < len(header), "the server waited for the whole trickle"
    assert reply == b"" or _error(reply)["code"] == "request_timeout"


def test_a_body_shorter_than_its_content_length_gets_a_408(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The 408, and for the app a client that left: logged (an info line), not as an internal error."""
    caplog.set_level(logging.INFO, logger="autoparser.serve")
    body = json.dumps({"model": QWEN, "messages": [{"role": "user", "content": "Hi"}]}).encode()
    with _connect(server) as sock:
        sock.sendall(_request(body, length=len(body) + 100))
        error = _error(_read_all(sock))
    assert "body" in error["message"]
    deadline = time.monotonic() + GUARD
    while not caplog.records and time.monotonic() < deadline:  # the app's line about the request
        time.sleep(0.02)
    assert caplog.records
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_whole_requests_on_a_kept_alive_connection_are_answered(server: LoopbackServer) -> None:
    """Two requests on one connection, the second after a pause shorter than the header timeout; the connection
    then idles past the header timeout and is closed without a reply (no request was begun)."""
    body = json.dumps({"model": QWEN, "messages": [{"role": "user", "content": "Hi"}]}).encode()
    with _connect(server) as sock:
        for _ in range(2):
            sock.sendall(_request(body))
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += sock.recv(65536)
            head, _, rest = reply.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
            while len(rest) < length:
                rest += sock.recv(65536)
            assert json.loads(rest[:length])["choices"][0]["message"]
            time.sleep(0.1)
        assert _read_all(sock) == b""


def test_an_unknown_http_implementation_is_refused() -> None:
    with pytest.raises(ValueError, match="httptools, h11"):
        timed_protocol(http="hyper")
