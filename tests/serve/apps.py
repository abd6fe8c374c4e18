"""Servers the security and operations tests run on their own: an autoparser app with options of its own (a key,
origins, a Host rule), and an upstream that misbehaves the way the credentials tests need (it echoes what it got)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app

from .double import LoopbackServer

__all__ = ["EchoUpstream", "closed_port", "serving"]


@contextmanager
def serving(upstream: str, template: str = "Qwen3.5-4B", **options: Any) -> Iterator[tuple[str, Any]]:
    """An autoparser app for ``template`` in front of ``upstream`` (``options``: ServeConfig fields), on a loopback
    port: (its base URL, the app)."""
    app = create_app(ChatTemplate.load(template), ServeConfig(upstream, model_name=template, **options))
    with LoopbackServer(app) as running:
        yield running.url, app


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EchoUpstream:
    """A llama.cpp-style upstream whose errors repeat what it was sent: the Authorization header (decoded too) and
    the URL it was asked on, as a careless engine might. ``healthy`` says what its ``/health`` answers."""

    def __init__(self) -> None:
        self.healthy = True
        self.authorizations: list[str] = []
        self.app = Starlette(
            routes=[
                Route("/completion", self._completion, methods=["POST"]),
                Route("/tokenize", self._tokenize, methods=["POST"]),
                Route("/health", self._health, methods=["GET"]),
            ]
        )

    def _echo(self, request: Request) -> str:
        auth = request.headers.get("authorization", "")
        self.authorizations.append(auth)
        return f"refused {auth!r} ({_decoded(auth)}) on {request.url}"

    async def _completion(self, request: Request) -> Response:
        body = await request.json()
        echo = self._echo(request)
        if not body.get("stream"):
            return JSONResponse({"error": {"code": 400, "message": echo, "type": "invalid_request_error"}}, 400)

        async def events() -> AsyncIterator[bytes]:
            yield b"data: " + json.dumps({"content": "Hi", "stop": False}).encode() + b"\n\n"
            yield b"data: " + json.dumps({"error": {"code": 500, "message": echo}}).encode() + b"\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _tokenize(self, request: Request) -> Response:
        return JSONResponse({"tokens": []})

    async def _health(self, request: Request) -> Response:
        self._echo(request)
        if self.healthy:
            return JSONResponse({"status": "ok"})
        return JSONResponse({"error": {"code": 503, "message": "Loading model"}}, status_code=503)


def _decoded(auth: str) -> str:
    import base64

    scheme, _, token = auth.partition(" ")
    if scheme != "Basic":
        return ""
    return base64.b64decode(token).decode()
